package compare

import (
	"fmt"
	"math"
	"time"

	"selmix/core/metric"
	"selmix/internal/safetext"
	"selmix/runs"
	"selmix/runs/record"
)

// Series is what the comparison view keeps of one run: not the store's
// export.Recorded (meta, config and the whole record.History) but what
// the view draws from it, ready to draw: every metric of Metrics as a
// series at full resolution (one value per refresh, with its step and
// seconds since the first), the last per-class recall, and the run's
// name, class names and config keys made safe for the terminal. The rest
// of its history is dropped once read, so a comparison of runs with
// K = 1000 costs O(refreshes + K) per run.
type Series struct {
	ID, Name  string
	Objective string // the objective it optimizes (run.json)
	Live      bool
	Config    map[string]string // config.toml flattened ("finetune.policy" → "uniform")
	Steps     []float64         // step of each refresh
	Secs      []float64         // seconds since the first refresh (NaN where the log has no time)
	Series    [][]float64       // Series[metric][refresh]; NaN where not measured
	Recall    []float64         // per-class recall at the last refresh
	Classes   []string          // class names ("" where unnamed)
}

// Label is the name shown for the run.
func (r *Series) Label() string {
	if r.Name != "" {
		return r.Name
	}
	return r.ID
}

// Metric is a series every refresh has: one of the run format's
// catalogue (record.AllSeries), shown under its Label.
type Metric struct {
	Name string
	s    record.Series
}

// shown are the keys (record.AllSeries) of the series the view offers
// after every objective's ψ, in its order: mean and worst recall, min
// coverage, s, and Δψ predicted and realised.
var shown = []string{"mean_recall", "min_recall", "min_coverage", record.KeyS, record.KeyPredicted, record.KeyRealised}

// Metrics are the comparable series: ψ of every objective, then the
// series of shown.
func Metrics() []Metric {
	var out []Metric
	for _, o := range metric.Objectives() {
		s := record.ObjectiveSeries(o)
		out = append(out, Metric{s.Label, s})
	}
	for _, k := range shown {
		s, ok := record.LookupSeries(k)
		if !ok {
			panic("compare: the catalogue has no series " + k)
		}
		out = append(out, Metric{s.Label, s})
	}
	return out
}

var metrics = Metrics()

// FromHistory keeps what the comparison needs of a decoded history;
// times are the refresh events' times in order (nil if unknown).
func FromHistory(id, name string, live bool, config map[string]string, h *record.History, times []time.Time) *Series {
	n := len(h.Refreshes)
	r := &Series{ID: id, Name: safetext.Line(name), Live: live, Config: config,
		Steps: make([]float64, n), Secs: make([]float64, n), Series: make([][]float64, len(metrics))}
	for m := range metrics {
		r.Series[m] = make([]float64, n)
	}
	for i := range h.Refreshes {
		rf := &h.Refreshes[i]
		r.Steps[i] = float64(rf.Step)
		r.Secs[i] = math.NaN()
		if len(times) == n && !times[0].IsZero() && !times[i].IsZero() {
			r.Secs[i] = times[i].Sub(times[0]).Seconds()
		}
		for m, mt := range metrics {
			r.Series[m][i] = mt.s.Value(rf)
		}
	}
	if n > 0 {
		r.Recall = append([]float64(nil), h.Refreshes[n-1].Stats.Report.Recall...)
	}
	if len(h.Starts) > 0 {
		for _, c := range h.Starts[0].ClassNames {
			r.Classes = append(r.Classes, safetext.Line(c))
		}
	}
	return r
}

// Load reads the runs ids of root (ids as `selmix open` takes them).
func Load(root string, ids []string) ([]*Series, error) {
	out := make([]*Series, 0, len(ids))
	for _, id := range ids {
		r, err := LoadRun(root, id)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// LoadRun reads one run: its event log decoded, its config flattened.
func LoadRun(root, id string) (*Series, error) {
	rr, err := runs.Open(root, id)
	if err != nil {
		return nil, err
	}
	h, err := record.Load(rr)
	if err != nil {
		return nil, err
	}
	// Each value as runs compare shows it, made safe for the terminal; an
	// unreadable config is empty.
	cfg := map[string]string{}
	if c, err := rr.FlatConfig(); err == nil {
		cfg = c.Lines()
	}
	r := FromHistory(rr.Meta.ID, rr.Meta.Name, rr.Live, cfg, h, refreshTimes(rr))
	r.Objective = rr.Meta.Objective
	return r, nil
}

// refreshTimes are the times of the run's refresh events, in order.
func refreshTimes(r *runs.Run) []time.Time {
	evs, _, err := r.Events()
	if err != nil {
		return nil
	}
	var out []time.Time
	for _, ev := range evs {
		if ev.Kind != record.KindRefresh {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, ev.Time)
		if err != nil {
			t = time.Time{}
		}
		out = append(out, t)
	}
	return out
}

// String describes r for errors and tests.
func (r *Series) String() string { return fmt.Sprintf("%s (%d refreshes)", r.ID, len(r.Steps)) }

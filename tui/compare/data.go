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

// Metric is a series every refresh has.
type Metric struct {
	Name string
	get  func(rf *record.RefreshEvent) float64
}

// Metrics are the comparable series: ψ of every objective, then mean and
// worst recall and min coverage (by their names in metric.Scalars), s,
// and Δψ predicted and realised.
func Metrics() []Metric {
	var out []Metric
	for i, o := range metric.Objectives() {
		out = append(out, Metric{"ψ " + string(o), func(rf *record.RefreshEvent) float64 {
			if i < len(rf.Stats.Objectives) {
				return rf.Stats.Objectives[i]
			}
			return math.NaN()
		}})
	}
	opt := func(p *float64) float64 {
		if p == nil {
			return math.NaN()
		}
		return *p
	}
	for _, k := range []string{"mean_recall", "min_recall", "min_coverage"} {
		sc, ok := metric.LookupScalar(k)
		if !ok {
			panic("compare: no reported metric " + k)
		}
		out = append(out, Metric{sc.Key, func(rf *record.RefreshEvent) float64 { return sc.Get(&rf.Stats.Report) }})
	}
	return append(out,
		Metric{"s", func(rf *record.RefreshEvent) float64 { return rf.Stats.S }},
		Metric{"Δψ predicted", func(rf *record.RefreshEvent) float64 { return opt(rf.Stats.Predicted) }},
		Metric{"Δψ realised", func(rf *record.RefreshEvent) float64 { return opt(rf.Stats.Realised) }},
	)
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
			r.Series[m][i] = mt.get(rf)
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

// Package viz draws publication figures of finished (or running) runs from
// their run directories with gonum/plot: metric curves, per-class recall
// and coverage, gain and mixup heatmaps, Lagrange multipliers, s, and
// run-vs-run comparisons. Every figure gets a CSV of the numbers it plots.
//
// It reads only what the run store holds, never a live engine, so a figure
// can always be redrawn later from the same directory.
package viz

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"selmix/core/metric"
	"selmix/runs"
	"selmix/runs/export"
	"selmix/runs/record"
)

// RunData is one run directory decoded: what every figure draws from.
// It is the run the exports read (export.Recorded: run.json, the decoded
// log, the flattened config) with what the figures derive from it.
type RunData struct {
	export.Recorded
	Objective metric.Objective // the objective at the start of the run
	Policy    string
	K         int
	Total     int // planned fine-tuning steps
	// ClassNames name the classes in figures and CSVs: the dataset's
	// names (Named), else the class indices.
	ClassNames []string
	Named      bool
	// configErr is why Config is nil in a run FromRun read (nil from
	// FromHistory, which reads no config).
	configErr error
}

// Load reads the run in dir.
func Load(dir string) (*RunData, error) {
	dir = filepath.Clean(dir)
	r, err := runs.Open(filepath.Dir(dir), filepath.Base(dir))
	if err != nil {
		return nil, err
	}
	return FromRun(r)
}

// FromRun decodes an opened run. A run with no refresh has nothing to
// draw and is an error.
func FromRun(r *runs.Run) (*RunData, error) {
	h, err := record.Load(r)
	if err != nil {
		return nil, err
	}
	out, err := FromHistory(r.Dir, r.Meta, h)
	if err != nil {
		return nil, err
	}
	out.Status = r.EffectiveStatus()
	if out.ConfigText, out.configErr = r.Config(); out.configErr == nil {
		out.Config, out.configErr = runs.ParseConfig(out.ConfigText, filepath.Join(r.Dir, "config.toml"))
	}
	return out, nil
}

// FromHistory builds a RunData from an already decoded history.
func FromHistory(dir string, m runs.Meta, h *record.History) (*RunData, error) {
	if len(h.Refreshes) == 0 {
		return nil, fmt.Errorf("run %s has no refresh in its log yet: nothing to plot", m.ID)
	}
	out := &RunData{Recorded: export.Recorded{Meta: m, Dir: dir, Hist: h}, Objective: metric.Objective(m.Objective), Policy: m.Policy}
	first := h.Refreshes[0]
	out.K = first.Stats.K
	if out.K == 0 {
		out.K = first.Stats.Report.K
	}
	out.Total = first.Total
	if len(h.Starts) > 0 {
		s := h.Starts[0]
		if s.K > 0 {
			out.K = s.K
		}
		if s.Total > 0 {
			out.Total = s.Total
		}
		out.ClassNames = s.ClassNames
	}
	if out.K <= 0 {
		return nil, errors.New("run log does not say how many classes it has")
	}
	if out.Objective == "" {
		out.Objective = first.Hyper.Objective
	}
	if out.Policy == "" {
		out.Policy = string(first.Hyper.Policy)
	}
	out.Named = len(out.ClassNames) == out.K
	if !out.Named {
		out.ClassNames = make([]string, out.K)
		for i := range out.ClassNames {
			out.ClassNames[i] = itoa(i)
		}
	}
	return out, nil
}

// Label is how the run is named in legends: its name, else its id.
func (r *RunData) Label() string {
	if r.Meta.Name != "" {
		return r.Meta.Name
	}
	return r.Meta.ID
}

// Metric is one scalar series a run reports at every refresh.
type Metric struct {
	Name  string // command-line name
	Title string // axis/panel title
	Unit  string // y-axis label
	get   func(rf *record.RefreshEvent) float64
	final func(r *metric.Report) float64 // nil for objectives ψ (see Summary)
	obj   int                            // index in metric.Objectives() for ψ, else -1
	// objective is the objective whose ψ a reported metric is ("" if
	// none): its panel is emphasised in a run that optimizes it.
	objective metric.Objective
}

func reportMetric(sc metric.Scalar) Metric {
	return seriesMetric(record.ReportSeries(sc), sc.Title, sc.Unit)
}

// seriesMetric is the series s of the run format's catalogue
// (record.AllSeries) as the figures draw it, under its Figure name.
func seriesMetric(s record.Series, title, unit string) Metric {
	m := Metric{Name: s.Figure, Title: title, Unit: unit, obj: s.Objective.Index(), get: s.Value}
	if s.Scalar != nil {
		m.final, m.objective = s.Scalar.Get, s.Scalar.Objective
	}
	return m
}

// figureMetrics are the keys (metric.Scalars) of the reported metrics
// the figures show, in their order.
var figureMetrics = []string{"mean_recall", "min_recall", "hmean", "gmean", "min_ht_recall", "min_coverage", "min_ht_coverage", "accuracy"}

// ReportedMetrics are the reported metrics the figures show (docs/method.md,
// Objectives), in their order, named by their keys in metric.Scalars.
func ReportedMetrics() []Metric {
	out := make([]Metric, len(figureMetrics))
	for i, k := range figureMetrics {
		sc, ok := metric.LookupScalar(k)
		if !ok {
			panic("viz: no reported metric " + k)
		}
		out[i] = reportMetric(sc)
	}
	return out
}

// ObjectiveMetric is ψ of obj over steps, named as the catalogue's
// Figure name says ("psi:<objective>", record.ObjectiveSeries).
func ObjectiveMetric(obj metric.Objective) Metric {
	s := record.ObjectiveSeries(obj)
	return seriesMetric(s, s.Label, "ψ")
}

// MetricNames lists the names ParseMetric accepts (it also takes every
// key of metric.Scalars and their old names, metric.LookupScalar, and the
// catalogue's keys and labels, record.LookupSeries).
func MetricNames() []string {
	var out []string
	for _, m := range ReportedMetrics() {
		out = append(out, m.Name)
	}
	for _, o := range metric.Objectives() {
		out = append(out, record.ObjectiveSeries(o).Figure)
	}
	return out
}

// ParseMetric finds a reported metric or an objective's ψ by any name the
// catalogue knows it by (record.LookupSeries); the error lists the valid
// names.
func ParseMetric(name string) (Metric, error) {
	if s, ok := record.LookupSeries(name); ok {
		switch {
		case s.Scalar != nil:
			return reportMetric(*s.Scalar), nil
		case s.Objective.Index() >= 0:
			return ObjectiveMetric(s.Objective), nil
		}
	}
	return Metric{}, fmt.Errorf("unknown metric %q (valid: %s)", name, strings.Join(MetricNames(), ", "))
}

// finalValue is m on the test set after fine-tuning, or, for a run with no
// final summary, on validation at its last refresh; set says which.
func finalValue(r *RunData, m Metric, test bool) float64 {
	if test {
		f := r.Hist.Final
		if m.final != nil {
			return m.final(&f.TestAfter)
		}
		if m.obj >= 0 && m.obj < len(f.TestObjAfter) {
			return f.TestObjAfter[m.obj]
		}
		return nan
	}
	last := r.Hist.Refreshes[len(r.Hist.Refreshes)-1]
	return m.get(&last)
}

func steps(r *RunData) []float64 {
	xs := make([]float64, len(r.Hist.Refreshes))
	for i, rf := range r.Hist.Refreshes {
		xs[i] = float64(rf.Step)
	}
	return xs
}

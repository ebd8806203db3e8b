package sweep

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat"

	"selmix/core/metric"
	"selmix/core/train"
	"selmix/runs"
	"selmix/runs/record"
)

// SeedKey is the axis a report averages over.
const SeedKey = "seed"

// ResultColumn is one test metric of a finished run's final summary, after
// fine-tuning (the last step), before it (the pre-trained model) and at
// the best step (the model the run keeps; NaN where it kept none): the
// columns of a sweep's report (viz.SweepReport) and of the paper suite's
// tables (bench.PaperReport).
type ResultColumn struct {
	Name                string // as a sweep's report heads it
	Short               string // as the paper suite's wider tables head it
	After, Before, Best func(s *train.Summary) float64
}

func reportColumn(name, short string, f func(metric.Report) float64) ResultColumn {
	return ResultColumn{name, short,
		func(s *train.Summary) float64 { return f(s.TestAfter) },
		func(s *train.Summary) float64 { return f(s.TestBefore) },
		func(s *train.Summary) float64 {
			if s.Best == nil {
				return math.NaN()
			}
			return f(s.Best.Test)
		}}
}

// ObjectiveColumn is ψ of objective o.
func ObjectiveColumn(o metric.Objective) ResultColumn {
	name := "ψ " + string(o)
	return ResultColumn{name, name,
		func(s *train.Summary) float64 { return o.In(s.TestObjAfter) },
		func(s *train.Summary) float64 { return o.In(s.TestObjBefore) },
		func(s *train.Summary) float64 {
			if s.Best == nil {
				return math.NaN()
			}
			return o.In(s.Best.TestObj)
		}}
}

// OptimizedColumn is ψ of the objective the run optimized (at best: the
// one the kept model was judged on).
var OptimizedColumn = ResultColumn{"ψ (optimized)", "ψ optimized",
	func(s *train.Summary) float64 { return s.Objective.In(s.TestObjAfter) },
	func(s *train.Summary) float64 { return s.Objective.In(s.TestObjBefore) },
	func(s *train.Summary) float64 {
		if s.Best == nil {
			return math.NaN()
		}
		return s.Best.Objective.In(s.Best.TestObj)
	}}

// MetricColumns are the metrics of metric.Report the reports show.
var MetricColumns = []ResultColumn{
	reportColumn("mean recall", "mean rec", func(r metric.Report) float64 { return r.MeanRecall }),
	reportColumn("min recall", "min rec", func(r metric.Report) float64 { return r.MinRecall }),
	reportColumn("H-mean", "H-mean", func(r metric.Report) float64 { return r.HMean }),
	reportColumn("G-mean", "G-mean", func(r metric.Report) float64 { return r.GMean }),
	reportColumn("min coverage", "min cov", func(r metric.Report) float64 { return r.MinCoverage }),
}

// ReportColumns are a sweep report's: the optimized ψ, then MetricColumns.
var ReportColumns = append([]ResultColumn{OptimizedColumn}, MetricColumns...)

// Results is what a sweep's report shows: its members grouped by every
// column but seed, with the final summaries of the finished ones.
type Results struct {
	ID      string
	Members int      // how many the sweep has
	Keys    []string // the grouping columns, by their short names
	Groups  []*Group
	Notes   []string // what was left out, and why
}

// Group is the members that differ only by seed.
type Group struct {
	Key       []string // display values of the grouping columns
	Label     string   // the group in figure legends: "objective=min-recall policy=greedy"
	Members   int
	Summaries []*train.Summary // of its finished members, in member order
	// First is its first finished member with a refresh in its log, and
	// History that log, for the figures; nil if none.
	First   *runs.Run
	History *record.History
	// Runs are its finished members and Histories their logs, in member
	// order, for the spread over seeds.
	Runs      []*runs.Run
	Histories []*record.History
}

// Finished is how many members have finished.
func (r *Results) Finished() int {
	n := 0
	for _, g := range r.Groups {
		n += len(g.Summaries)
	}
	return n
}

// Results reads the final summaries of s's finished members, grouped by
// every column but seed. Notes say which members could not be read.
func (s *Sweep) Results() (*Results, error) {
	byName, err := s.Runs()
	if err != nil {
		return nil, err
	}
	res := &Results{ID: s.ID, Members: len(s.Members)}
	var keyCols []int
	names := ShortNames(s.Columns)
	for c, k := range s.Columns {
		if k != SeedKey {
			keyCols = append(keyCols, c)
			res.Keys = append(res.Keys, names[c])
		}
	}
	find := func(key []string) *Group {
		for _, g := range res.Groups {
			if slices.Equal(g.Key, key) {
				return g
			}
		}
		g := &Group{Key: key, Label: label(s, keyCols, key)}
		res.Groups = append(res.Groups, g)
		return g
	}
	for i, m := range s.Members {
		key := make([]string, len(keyCols))
		for j, c := range keyCols {
			key[j] = Display(m.Vary[c])
		}
		g := find(key)
		g.Members++
		run, err := s.pick(i, byName)
		if err != nil {
			res.Notes = append(res.Notes, err.Error())
			continue
		}
		if run == nil {
			continue
		}
		h, err := record.Load(run)
		if err != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("member %d: %v", i, err))
			continue
		}
		if h.Final == nil {
			continue
		}
		g.Summaries = append(g.Summaries, h.Final)
		g.Runs, g.Histories = append(g.Runs, run), append(g.Histories, h)
		if g.First == nil && len(h.Refreshes) > 0 {
			g.First, g.History = run, h
		}
	}
	return res, nil
}

// RankedBy names what Ranked orders by, for a report to say.
var RankedBy = OptimizedColumn.Name + " on test at the best step (the model each run keeps)"

// Ranked orders the groups by the mean over their finished members of
// the optimized ψ on test at the best step, highest first; groups with no
// such value (none finished, or none kept a model) go last, in their order.
func (r *Results) Ranked() []*Group {
	key := func(g *Group) float64 {
		xs := make([]float64, len(g.Summaries))
		for k, s := range g.Summaries {
			xs[k] = OptimizedColumn.Best(s)
		}
		if xs = Known(xs); len(xs) == 0 {
			return math.Inf(-1)
		}
		return stat.Mean(xs, nil)
	}
	out := slices.Clone(r.Groups)
	slices.SortStableFunc(out, func(a, b *Group) int { return cmp.Compare(key(b), key(a)) })
	return out
}

// label names a group in figure legends: "objective=min-recall policy=greedy".
func label(s *Sweep, keyCols []int, key []string) string {
	var parts []string
	names := ShortNames(s.Columns)
	for j, c := range keyCols {
		if key[j] != "" {
			parts = append(parts, names[c]+"="+key[j])
		}
	}
	return strings.Join(parts, " ")
}

// Known drops the NaN of xs: the members that have no value (at best:
// those that kept no model).
func Known(xs []float64) []float64 {
	return slices.DeleteFunc(slices.Clone(xs), math.IsNaN)
}

// MeanStd formats xs as "mean ± sample std", the mean alone for one
// value, and "–" for none.
func MeanStd(xs []float64) string {
	switch len(xs) {
	case 0:
		return "–"
	case 1:
		return fmt.Sprintf("%.4f", xs[0])
	}
	m, sd := stat.MeanStdDev(xs, nil) // sample (n−1) standard deviation
	return fmt.Sprintf("%.4f ± %.4f", m, sd)
}

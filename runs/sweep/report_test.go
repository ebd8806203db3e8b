package sweep

import (
	"math"
	"slices"
	"testing"

	"selmix/core/metric"
	"selmix/core/train"
)

// The result columns read a summary's test metrics after fine-tuning and
// before it; ψ of an objective the summary lacks is NaN.
func TestResultColumns(t *testing.T) {
	objs := func(base float64) []float64 {
		v := make([]float64, len(metric.Objectives()))
		for i := range v {
			v[i] = base + float64(i)
		}
		return v
	}
	rep := func(base float64) metric.Report {
		return metric.Report{MeanRecall: base + 0.1, MinRecall: base + 0.2, HMean: base + 0.3, GMean: base + 0.4, MinCoverage: base + 0.5}
	}
	// The kept model was judged on min-recall (the objective changed).
	best := &train.Best{Step: 50, Objective: metric.MinRecall, Test: rep(3), TestObj: objs(30)}
	s := &train.Summary{Objective: metric.HMean, TestAfter: rep(1), TestBefore: rep(2), TestObjAfter: objs(10), TestObjBefore: objs(20), Best: best}
	h, m := float64(metric.HMean.Index()), float64(metric.MinRecall.Index())
	for _, c := range []struct {
		col                 ResultColumn
		name, short         string
		after, before, best float64
	}{
		{OptimizedColumn, "ψ (optimized)", "ψ optimized", 10 + h, 20 + h, 30 + m},
		{MetricColumns[0], "mean recall", "mean rec", 1.1, 2.1, 3.1},
		{MetricColumns[1], "min recall", "min rec", 1.2, 2.2, 3.2},
		{MetricColumns[2], "H-mean", "H-mean", 1.3, 2.3, 3.3},
		{MetricColumns[3], "G-mean", "G-mean", 1.4, 2.4, 3.4},
		{MetricColumns[4], "min coverage", "min cov", 1.5, 2.5, 3.5},
		{ObjectiveColumn(metric.MinRecall), "ψ min-recall", "ψ min-recall", 10 + m, 20 + m, 30 + m},
	} {
		if c.col.Name != c.name || c.col.Short != c.short || c.col.After(s) != c.after || c.col.Before(s) != c.before || c.col.Best(s) != c.best {
			t.Errorf("%s: %q/%q, after %v, before %v, best %v; want %q/%q, %v, %v, %v", c.name, c.col.Name, c.col.Short, c.col.After(s), c.col.Before(s), c.col.Best(s), c.name, c.short, c.after, c.before, c.best)
		}
	}
	s.Best = nil
	for _, c := range ReportColumns {
		if v := c.Best(s); !math.IsNaN(v) {
			t.Errorf("%s at best of a run that kept no model = %v, want NaN", c.Name, v)
		}
	}
	if len(ReportColumns) != 1+len(MetricColumns) || ReportColumns[0].Name != OptimizedColumn.Name {
		t.Errorf("report columns %d, want the optimized ψ and the %d metrics", len(ReportColumns), len(MetricColumns))
	}
	s.TestObjAfter = nil
	if v := OptimizedColumn.After(s); !math.IsNaN(v) {
		t.Errorf("ψ without objective values = %v, want NaN", v)
	}
}

// Ranked puts the groups in order of their mean optimized ψ on test at the
// best step; groups with none (unfinished, no kept model) go last in
// their order.
func TestRanked(t *testing.T) {
	sum := func(best float64) *train.Summary {
		objs := make([]float64, len(metric.Objectives()))
		objs[metric.MinRecall.Index()] = best
		after := make([]float64, len(objs))
		after[metric.MinRecall.Index()] = 1 - best // the end ranks the other way
		return &train.Summary{Objective: metric.MinRecall, TestObjAfter: after, Best: &train.Best{Objective: metric.MinRecall, TestObj: objs}}
	}
	noBest := &train.Summary{Objective: metric.MinRecall}
	r := &Results{Groups: []*Group{
		{Key: []string{"none"}},
		{Key: []string{"low"}, Summaries: []*train.Summary{sum(0.2), sum(0.4)}},   // 0.3
		{Key: []string{"kept none"}, Summaries: []*train.Summary{noBest}},         // –
		{Key: []string{"high"}, Summaries: []*train.Summary{sum(0.5), noBest}},    // 0.5
		{Key: []string{"mid"}, Summaries: []*train.Summary{sum(0.35), sum(0.45)}}, // 0.4
	}}
	var got []string
	for _, g := range r.Ranked() {
		got = append(got, g.Key[0])
	}
	if want := []string{"high", "mid", "low", "none", "kept none"}; !slices.Equal(got, want) {
		t.Errorf("Ranked = %v, want %v", got, want)
	}
	if r.Groups[0].Key[0] != "none" {
		t.Errorf("Ranked reordered the results' own groups")
	}
}

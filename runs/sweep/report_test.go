package sweep

import (
	"math"
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
	s := &train.Summary{Objective: metric.HMean, TestAfter: rep(1), TestBefore: rep(2), TestObjAfter: objs(10), TestObjBefore: objs(20)}
	h := float64(metric.HMean.Index())
	for _, c := range []struct {
		col           ResultColumn
		name, short   string
		after, before float64
	}{
		{OptimizedColumn, "ψ (optimized)", "ψ optimized", 10 + h, 20 + h},
		{MetricColumns[0], "mean recall", "mean rec", 1.1, 2.1},
		{MetricColumns[1], "min recall", "min rec", 1.2, 2.2},
		{MetricColumns[2], "H-mean", "H-mean", 1.3, 2.3},
		{MetricColumns[3], "G-mean", "G-mean", 1.4, 2.4},
		{MetricColumns[4], "min coverage", "min cov", 1.5, 2.5},
		{ObjectiveColumn(metric.MinRecall), "ψ min-recall", "ψ min-recall", 10 + float64(metric.MinRecall.Index()), 20 + float64(metric.MinRecall.Index())},
	} {
		if c.col.Name != c.name || c.col.Short != c.short || c.col.After(s) != c.after || c.col.Before(s) != c.before {
			t.Errorf("%s: %q/%q, after %v, before %v; want %q/%q, %v, %v", c.name, c.col.Name, c.col.Short, c.col.After(s), c.col.Before(s), c.name, c.short, c.after, c.before)
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

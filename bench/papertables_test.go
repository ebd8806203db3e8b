package bench

import (
	"fmt"
	"strings"
	"testing"

	"selmix/core/metric"
	"selmix/core/train"
)

// paperSum is a summary of a run that optimized o: its ψ on test is end
// at the last step and best at the best step (none kept if best < 0).
func paperSum(o metric.Objective, end, best float64) *train.Summary {
	objs := func(v float64) []float64 {
		out := make([]float64, len(metric.Objectives()))
		out[o.Index()] = v
		return out
	}
	s := &train.Summary{Objective: o, TestObjAfter: objs(end), TestObjBefore: objs(0.1),
		TestAfter: metric.Report{MeanRecall: end}, TestBefore: metric.Report{MeanRecall: 0.1}}
	if best >= 0 {
		s.Best = &train.Best{Step: 50, Objective: o, Test: metric.Report{MeanRecall: best}, TestObj: objs(best)}
	}
	return s
}

// The paper suite's tables show test at the best step beside the last
// step's, labelled: the objectives table as a second table, the policy
// comparison as a second row per objective. The case of issue #38: at the
// end uniform is ahead, at best selmix.
func TestPaperTablesAtBest(t *testing.T) {
	mr := metric.MinRecall
	rs := []paperResult{
		{table: "objectives", label: "min-recall", sum: paperSum(mr, 0.36, 0.65)},
		{table: "objectives", label: "min-recall", sum: paperSum(mr, 0.38, 0.67)},
		{table: "policies", label: "min-recall/uniform", sum: paperSum(mr, 0.43, 0.44)},
		{table: "policies", label: "min-recall/uniform", sum: paperSum(mr, 0.43, -1)}, // kept none
	}
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	objectivesTable(p, rs, "la-ce")
	means := policyTable(p, rs)
	out := b.String()
	for _, want := range []string{
		"| min-recall | 0.3700 ± 0.0141 |",                        // mean recall at the end
		"| optimized on (at best) |",                              // the second table
		"| min-recall | 0.6600 ± 0.0141 |",                        // at best
		"| min-recall, end | 0.3700 ± 0.0141 | 0.4300 ± 0.0000 |", // selmix, uniform
		"| min-recall, at best | 0.6600 ± 0.0141 | 0.4400 |",      // uniform: one kept a model
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if m := means["min-recall"]; m["selmix"] != 0.37 || m["uniform"] != 0.43 {
		t.Errorf("policy means %v, want the ends (0.37, 0.43)", means)
	}
}

package bench

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"selmix/core/loop"
	"selmix/core/metric"
)

// paperSum is a summary of a run that optimized o: its ψ on test is end
// at the last step and best at the best step (none kept if best < 0).
func paperSum(o metric.Objective, end, best float64) *loop.Summary {
	objs := func(v float64) []float64 {
		out := make([]float64, len(metric.Objectives()))
		out[o.Index()] = v
		return out
	}
	s := &loop.Summary{Objective: o, TestObjAfter: objs(end), TestObjBefore: objs(0.1),
		TestAfter: metric.Report{MeanRecall: end}, TestBefore: metric.Report{MeanRecall: 0.1}}
	if best >= 0 {
		s.Best = &loop.Best{Step: 50, Objective: o, Test: metric.Report{MeanRecall: best}, TestObj: objs(best)}
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

// covSum is a mean-recall@cov run whose test coverage at the end is end
// and at the best step best (K = 2, α/K = 0.475 at the default α).
func covSum(psiEnd, psiBest float64, end, best []float64) *loop.Summary {
	s := paperSum(metric.MeanRecallCov, psiEnd, psiBest)
	s.Alpha = 0.95
	s.TestAfter.K, s.TestAfter.Coverage = 2, end
	s.Best.Test.K, s.Best.Test.Coverage = 2, best
	return s
}

// What the mixup adds is selmix − resample seed by seed: a seed that ran
// only one of them is left out of the difference; the constraint table
// counts the seeds whose every class met α/K on test, at the end and at
// best, for every coverage row and no other.
func TestPaperResampleAndConstraints(t *testing.T) {
	mr := metric.MeanRecall
	rs := []paperResult{
		{table: "objectives", label: "mean-recall", seed: "1", sum: paperSum(mr, 0.80, 0.82)},
		{table: "objectives", label: "mean-recall", seed: "2", sum: paperSum(mr, 0.84, 0.83)},
		{table: "objectives", label: "mean-recall", seed: "3", sum: paperSum(mr, 0.90, 0.90)},
		{table: "resample", label: "mean-recall/resample", seed: "1", sum: paperSum(mr, 0.78, 0.79)},
		{table: "resample", label: "mean-recall/resample", seed: "2", sum: paperSum(mr, 0.85, 0.80)},
		// Coverage 0.475 is met exactly (to 1e-9), 0.4749 is not.
		{table: "objectives", label: "mean-recall@cov", seed: "1", sum: covSum(0.1, 0.2, []float64{0.475, 0.525}, []float64{0.5, 0.5})},
		{table: "objectives", label: "mean-recall@cov", seed: "2", sum: covSum(0.3, 0.4, []float64{0.4749, 0.5251}, []float64{0.48, 0.52})},
		{table: "margin", label: "mean-recall@cov/cov_margin auto", seed: "1", sum: covSum(0.5, 0.5, []float64{0.3, 0.7}, []float64{0.2, 0.8})},
	}
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	resampleTable(p, rs)
	constraintTable(p, rs)
	out := b.String()
	for _, want := range []string{
		// Seeds 1 and 2: Δ = 0.02 and −0.01 at the end, 0.03 and 0.03 at best.
		"| mean-recall | 0.8200 ± 0.0283 | 0.8150 ± 0.0495 | +0.0050 ± 0.0212 | 1 of 2 | 0.8250 ± 0.0071 | 0.7950 ± 0.0071 | +0.0300 ± 0.0000 | 2 of 2 |",
		"| mean-recall@cov | 1 of 2 | 0.2000 ± 0.1414 | 2 of 2 | 0.3000 ± 0.1414 |",
		"| mean-recall@cov/cov_margin auto | 0 of 1 | 0.5000 | 0 of 1 | 0.5000 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "| mean-recall/resample |") || strings.Count(out, "\n| mean-recall") != 3 {
		t.Errorf("rows without a coverage constraint in the constraint table:\n%s", out)
	}
}

// The runs' settings name paths relative to the folder the suite ran in.
func TestRelativeSets(t *testing.T) {
	sets := []string{`pretrain.cache="/home/a/repo/runs/x/.pretrained"`, `data.dir="/usr/share/d"`, `finetune.steps=20`, `name="paper-1"`, `data.train="/home/a/repo2/t.npz"`}
	got := relativeSets(sets, "/home/a/repo", "/home/a/repo/runs/x")
	want := []string{`pretrain.cache="runs/x/.pretrained"`, `data.dir="/usr/share/d"`, `finetune.steps=20`, `name="paper-1"`, `data.train="/home/a/repo2/t.npz"`}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	// A runs root outside the folder the suite ran in.
	got = relativeSets(sets[:1], "/home/b", "/home/a/repo/runs")
	want = []string{`pretrain.cache="<runs root>/x/.pretrained"`}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// The plug-in baseline's table puts, per objective, the plug-in on the
// pre-trained model and after SelMix beside SelMix; members that did not
// measure it are left out, and without any the table is not written.
func TestPaperPluginTable(t *testing.T) {
	mr := metric.MinRecall
	withPlugin := func(end, alone, after float64) *loop.Summary {
		s := paperSum(mr, end, -1)
		objs := func(v float64) []float64 {
			out := make([]float64, len(metric.Objectives()))
			out[mr.Index()] = v
			return out
		}
		s.PluginBefore = &loop.Plugin{Objective: mr, TestObj: objs(alone)}
		s.PluginAfter = &loop.Plugin{Objective: mr, TestObj: objs(after)}
		return s
	}
	rs := []paperResult{
		{table: "objectives", label: "min-recall", sum: withPlugin(0.60, 0.50, 0.62)},
		{table: "objectives", label: "min-recall", sum: withPlugin(0.64, 0.54, 0.66)},
		{table: "objectives", label: "min-recall", sum: paperSum(mr, 0.62, -1)}, // no plug-in measured
	}
	var b strings.Builder
	pluginTable(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }, rs)
	want := "| min-recall | 0.1000 ± 0.0000 | 0.5200 ± 0.0283 | 0.6200 ± 0.0200 | 0.6400 ± 0.0283 |\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("plug-in table lacks %q:\n%s", want, b.String())
	}
	b.Reset()
	pluginTable(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }, rs[2:])
	if b.Len() != 0 {
		t.Errorf("a suite without plug-in results has a table:\n%s", b.String())
	}
}

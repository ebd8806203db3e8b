package sweep

import (
	"math"
	"slices"
	"testing"

	"selmix/core/loop"
	"selmix/core/metric"
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
	best := &loop.Best{Step: 50, Objective: metric.MinRecall, Test: rep(3), TestObj: objs(30)}
	s := &loop.Summary{Objective: metric.HMean, TestAfter: rep(1), TestBefore: rep(2), TestObjAfter: objs(10), TestObjBefore: objs(20), Best: best}
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
	sum := func(best float64) *loop.Summary {
		objs := make([]float64, len(metric.Objectives()))
		objs[metric.MinRecall.Index()] = best
		after := make([]float64, len(objs))
		after[metric.MinRecall.Index()] = 1 - best // the end ranks the other way
		return &loop.Summary{Objective: metric.MinRecall, TestObjAfter: after, Best: &loop.Best{Objective: metric.MinRecall, TestObj: objs}}
	}
	noBest := &loop.Summary{Objective: metric.MinRecall}
	r := &Results{Groups: []*Group{
		{Key: []string{"none"}},
		{Key: []string{"low"}, Summaries: []*loop.Summary{sum(0.2), sum(0.4)}},   // 0.3
		{Key: []string{"kept none"}, Summaries: []*loop.Summary{noBest}},         // –
		{Key: []string{"high"}, Summaries: []*loop.Summary{sum(0.5), noBest}},    // 0.5
		{Key: []string{"mid"}, Summaries: []*loop.Summary{sum(0.35), sum(0.45)}}, // 0.4
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

// pairSummary is a finished member whose optimized ψ (min recall) on test
// at the last step is psi; at best it kept no model unless best ≥ 0, its
// ψ there.
func pairSummary(psi, best float64) *loop.Summary {
	objs := make([]float64, len(metric.Objectives()))
	objs[metric.MinRecall.Index()] = psi
	s := &loop.Summary{Objective: metric.MinRecall, TestObjAfter: objs, TestAfter: metric.Report{MeanRecall: psi / 2}}
	if best >= 0 {
		bo := make([]float64, len(objs))
		bo[metric.MinRecall.Index()] = best
		s.Best = &loop.Best{Objective: metric.MinRecall, TestObj: bo}
	}
	return s
}

// Paired pairs a group's members with its reference's of the same seed,
// whatever their order, leaves out seeds only one of them finished and
// values one lacks; the numbers are worked out by hand below.
func TestPaired(t *testing.T) {
	ref := &Group{Key: []string{"resample"}, Seeds: []string{"1", "2", "3"},
		Summaries: []*loop.Summary{pairSummary(0.50, 0.40), pairSummary(0.60, -1), pairSummary(0.70, 0.30)}}
	sel := &Group{Key: []string{"selmix"}, Seeds: []string{"3", "1", "4", "2"},
		Summaries: []*loop.Summary{pairSummary(0.80, 0.45), pairSummary(0.55, 0.50), pairSummary(0.90, 0.90), pairSummary(0.70, 0.20)}}
	last := func(s *loop.Summary) float64 { return OptimizedColumn.After(s) }
	best := func(s *loop.Summary) float64 { return OptimizedColumn.Best(s) }
	mean := func(s *loop.Summary) float64 { return MetricColumns[0].After(s) }
	for _, c := range []struct {
		name  string
		value func(*loop.Summary) float64
		// seed 3: 0.80 − 0.70, seed 1: 0.55 − 0.50, seed 2: 0.70 − 0.60;
		// seed 4 has no partner.
		want []float64
		text string
	}{
		// mean 0.25/3 = 0.08333; deviations 1/60, −1/30, 1/60: sample
		// variance (1/3600 + 4/3600 + 1/3600)/2 = 1/1200, std 0.02887.
		{"last step", last, []float64{0.10, 0.05, 0.10}, "+0.0833 ± 0.0289"},
		// at best seed 2 of the reference kept no model: 0.45 − 0.30 and
		// 0.50 − 0.40, mean 0.125, std √(2·0.025²) = 0.03536.
		{"best step", best, []float64{0.15, 0.10}, "+0.1250 ± 0.0354"},
		// mean recall is ψ/2: half of the last step's.
		{"mean recall", mean, []float64{0.05, 0.025, 0.05}, "+0.0417 ± 0.0144"},
	} {
		got := Paired(sel, ref, c.value)
		ok := len(got) == len(c.want)
		for k := range got {
			ok = ok && math.Abs(got[k]-c.want[k]) < 1e-12
		}
		if !ok {
			t.Errorf("%s: Paired = %v, want %v", c.name, got, c.want)
		}
		if s := MeanStdSigned(got); s != c.text {
			t.Errorf("%s: %q, want %q", c.name, s, c.text)
		}
	}
	if got := Paired(ref, ref, last); !slices.Equal(got, []float64{0, 0, 0}) {
		t.Errorf("a group against itself: %v, want zeros", got)
	}
	worse := &Group{Seeds: []string{"2"}, Summaries: []*loop.Summary{pairSummary(0.5, -1)}}
	if s := MeanStdSigned(Paired(worse, ref, last)); s != "-0.1000" {
		t.Errorf("one pair below the reference: %q, want -0.1000", s)
	}
	if s := MeanStdSigned(Paired(&Group{Seeds: []string{"9"}, Summaries: []*loop.Summary{pairSummary(1, -1)}}, ref, last)); s != "–" {
		t.Errorf("no common seed: %q, want –", s)
	}
}

// ParseReference takes a grouping column by its whole key or its heading
// and a value some member has, as shown or as TOML text; RefGroup finds
// the group with a group's other values and the reference's.
func TestParseReference(t *testing.T) {
	r := &Results{Keys: []string{"objective", "policy"}, Columns: []string{"finetune.objective", "finetune.policy"}, Seeded: true, Groups: []*Group{
		{Key: []string{"hmean", "selmix"}}, {Key: []string{"hmean", "resample"}},
		{Key: []string{"min-recall", "selmix"}}, {Key: []string{"min-recall", "resample"}},
	}}
	for _, spec := range []string{"finetune.policy=resample", "policy=resample", ` policy = "resample"`} {
		ref, err := r.ParseReference(spec)
		if err != nil || ref != (Reference{Col: 1, Key: "policy", Value: "resample"}) {
			t.Errorf("ParseReference(%q) = %+v, %v; want policy=resample", spec, ref, err)
			continue
		}
		if g := r.RefGroup(r.Groups[2], ref); g != r.Groups[3] {
			t.Errorf("reference of min-recall selmix: %v, want min-recall resample", g.Key)
		}
		if g := r.RefGroup(r.Groups[1], ref); g != r.Groups[1] {
			t.Errorf("reference of a reference group: %v, want itself", g.Key)
		}
	}
	if ref, _ := r.ParseReference("objective=hmean"); r.RefGroup(r.Groups[2], ref) != r.Groups[0] || ref.String() != "objective=hmean" {
		t.Errorf("objective=hmean: %+v", ref)
	}
	if g := r.RefGroup(&Group{Key: []string{"gmean", "selmix"}}, Reference{Col: 1, Key: "policy", Value: "resample"}); g != nil {
		t.Errorf("reference of a group whose other values no reference has: %v, want none", g.Key)
	}
	for _, c := range []struct{ spec, want string }{
		{"policy", "want KEY=VALUE, such as finetune.policy=resample"},
		{"policy=", "want KEY=VALUE, such as finetune.policy=resample"},
		{"polcy=resample", "no column polcy: the sweep varies finetune.objective, finetune.policy, seed"},
		{"policy=greedy", "no member has policy=greedy (its values: selmix, resample)"},
		{"seed=1", "seed is what members are paired over; name another column"},
	} {
		if _, err := r.ParseReference(c.spec); err == nil || err.Error() != c.want {
			t.Errorf("ParseReference(%q): %v, want %q", c.spec, err, c.want)
		}
	}
	r.Seeded = false
	if _, err := r.ParseReference("policy=resample"); err == nil || err.Error() != "the sweep has no seed axis: there is nothing to pair members over" {
		t.Errorf("without seeds: %v", err)
	}
}

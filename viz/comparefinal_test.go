package viz

import (
	"math"
	"slices"
	"strconv"
	"testing"

	"selmix/core/loop"
)

// compare-final shows, for a run that kept a model, its test at the best
// step beside its last step's, labelled, from the run's own summary; a
// run that kept none has its end only.
func TestCompareFinalAtBest(t *testing.T) {
	sel, uni := fixture(t, "viz-selmix"), fixture(t, "viz-uniform")
	f := sel.Hist.Final
	rep := f.TestBefore
	rep.MeanRecall = 0.4321
	sel.Hist.Final.Best = &loop.Best{Step: 120, Test: rep, TestObj: f.TestObjBefore}
	fg := newFigure(goldenOpts, colWidth, 2*72)
	d, err := compareFinal(fg, []*RunData{sel, uni})
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, r := range d.table.rows {
		if r[1] == "mean_recall" {
			rows[r[0]] = r[2]
		}
	}
	want := map[string]string{
		sel.Label() + " at the end":         formatValue(f.TestAfter.MeanRecall),
		sel.Label() + " at best (step 120)": "0.4321",
		uni.Label():                         formatValue(uni.Hist.Final.TestAfter.MeanRecall),
		"pre-trained":                       formatValue(f.TestBefore.MeanRecall),
	}
	for k, v := range want {
		if rows[k] != v {
			t.Errorf("mean recall of %q = %q, want %q (rows %v)", k, rows[k], v, rows)
		}
	}
	if len(rows) != len(want) {
		t.Errorf("series %v, want %v", rows, want)
	}
	if _, err := fg.render(d.draw); err != nil {
		t.Errorf("drawing: %v", err)
	}
}

// compare-final by group (export --compare --group-by) has a bar per
// group: the mean over its runs of each final metric, with the sample std
// and how many runs it is over in its CSV (whiskers in the figure); at
// the best step over the runs that kept a model. The means and stds are
// worked out here from the runs' own summaries.
func TestCompareFinalGroups(t *testing.T) {
	sel, uni := fixture(t, "viz-selmix"), fixture(t, "viz-uniform")
	f := sel.Hist.Final
	rep := f.TestBefore
	rep.MeanRecall = 0.4321
	sel.Hist.Final.Best = &loop.Best{Step: 120, Test: rep, TestObj: f.TestObjBefore}
	fg := newFigure(goldenOpts, fullWidth, 3*72)
	d, err := compareFinalGroups(fg, []Group{{"both", []*RunData{sel, uni}}, {"selmix", []*RunData{sel}}}, "finetune.policy")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"group", "metric", "n", "std", "mean", "note"}; !slices.Equal(d.table.header, want) {
		t.Errorf("CSV header %q, want %q", d.table.header, want)
	}
	type cell struct {
		n       string
		std, mu float64
	}
	got := map[string]cell{}
	for _, r := range d.table.rows {
		if r[1] != "mean_recall" {
			continue
		}
		var c cell
		c.n = r[2]
		if r[3] != "" {
			c.std, _ = strconv.ParseFloat(r[3], 64)
		}
		c.mu, _ = strconv.ParseFloat(r[4], 64)
		got[r[0]] = c
	}
	x, y := f.TestAfter.MeanRecall, uni.Hist.Final.TestAfter.MeanRecall
	want := map[string]cell{
		"pre-trained":                           {"", 0, f.TestBefore.MeanRecall},
		"finetune.policy=both (2) at the end":   {"2", math.Abs(x-y) / math.Sqrt2, (x + y) / 2},
		"finetune.policy=both (2) at best":      {"1", 0, 0.4321}, // only selmix kept a model
		"finetune.policy=selmix (1) at the end": {"1", 0, x},
		"finetune.policy=selmix (1) at best":    {"1", 0, 0.4321},
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok || g.n != w.n || math.Abs(g.std-w.std) > 1e-12 || math.Abs(g.mu-w.mu) > 1e-12 {
			t.Errorf("mean recall of %q = %+v (%v), want %+v", k, g, ok, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("series %v, want %v", got, want)
	}
	if x == y {
		t.Fatal("the fixture runs end at the same mean recall: the std tests nothing")
	}
	if _, err := fg.render(d.draw); err != nil {
		t.Errorf("drawing: %v", err)
	}
}

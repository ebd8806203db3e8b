package viz

import (
	"testing"

	"selmix/core/train"
)

// compare-final shows, for a run that kept a model, its test at the best
// step beside its last step's, labelled, from the run's own summary; a
// run that kept none has its end only.
func TestCompareFinalAtBest(t *testing.T) {
	sel, uni := fixture(t, "viz-selmix"), fixture(t, "viz-uniform")
	f := sel.Hist.Final
	rep := f.TestBefore
	rep.MeanRecall = 0.4321
	sel.Hist.Final.Best = &train.Best{Step: 120, Test: rep, TestObj: f.TestObjBefore}
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

package viz

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
)

// A size smaller than a figure's own lays it out larger and scales it
// down, text and all (issue #37, bug 3: at 3.5x2.5in, the example of
// export --help, metrics.png's panels collapsed and tick labels piled
// up); a size that would need text under 5 pt is refused with the
// smallest of its shape that works.
func TestSizeScalesLayout(t *testing.T) {
	o := Options{Width: 3.5 * vg.Inch, Height: 2.5 * vg.Inch, DPI: 60}
	f := newFigure(o, fullWidth, 5*vg.Inch) // metrics
	// Laid out 5 in wide at least and 3/4 of its 5 in height: the height
	// binds, k = 2.5/3.75.
	if want := 2.5 / 3.75; math.Abs(f.k-want) > 1e-9 || math.Abs(float64(f.dh()-3.75*vg.Inch)) > 1e-6 || f.w != o.Width {
		t.Errorf("metrics at 3.5x2.5in: k %v (want %v), laid out %v×%v", f.k, want, f.dw(), f.dh())
	}
	if f := newFigure(o, colWidth, 2.4*vg.Inch); f.k != 1 {
		t.Errorf("a column figure at its own width is scaled by %v", f.k)
	}
	if err := CheckSize(o); err != nil {
		t.Errorf("3.5x2.5in refused: %v", err)
	}
	err := CheckSize(Options{Width: 2 * vg.Inch, Height: 1.5 * vg.Inch})
	if err == nil || !strings.Contains(err.Error(), "smallest of this shape that works is 2.5x1.88in") {
		t.Errorf("2x1.5in: %v", err)
	}
	if err := CheckSize(Options{Width: 2.5 * vg.Inch, Height: 1.875 * vg.Inch}); err != nil {
		t.Errorf("the smallest it names is refused: %v", err)
	}
	r := fixture(t, "viz-selmix")
	for _, format := range []string{"png", "svg", "pdf", "tex"} {
		o.Format = format
		if _, err := Export(r, filepath.Join(t.TempDir(), format), o); err != nil {
			t.Errorf("%s at 3.5x2.5in: %v", format, err)
		}
	}
}

// Runs that share a name are told apart by their id in comparison
// legends (issue #37); a unique name stays as it is.
func TestDistinctLabels(t *testing.T) {
	run := func(id, name string) *RunData {
		r := &RunData{}
		r.Meta.ID, r.Meta.Name = id, name
		return r
	}
	rs := []*RunData{run("a1", "min-recall-selmix"), run("b2", "min-recall-selmix"), run("c3", "other")}
	got := distinctLabels(rs)
	want := []string{"min-recall-selmix (a1)", "min-recall-selmix (b2)", "other"}
	for i := range want {
		if got[i].Label() != want[i] {
			t.Errorf("label %d: %q, want %q", i, got[i].Label(), want[i])
		}
	}
	if rs[0].Meta.Name != "min-recall-selmix" {
		t.Error("distinctLabels changed its argument")
	}
}

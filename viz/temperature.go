package viz

import (
	"math"
)

// sFigure: the inverse temperature s over steps, as a step function with
// its changes marked.
func sFigure(f *figure, r *RunData) (*drawing, error) {
	xs := steps(r)
	ys := make([]float64, len(xs))
	t := newTable("series", "step", "value")
	for k, rf := range r.Hist.Refreshes {
		ys[k] = rf.Hyper.S
		t.add(ys[k], "s", itoa(rf.Step))
	}
	p := f.newPlot("inverse temperature s of P = softmax(s·G)", "step (SGD iterations)", "s (1/gain units)")
	p.Add(gridLines())
	series(p, xs, ys, lineStyle(postColor, 1.2), true)
	f.addControls(p, r, "s")
	noteControls(t, r, "s", 2)
	setXRange(p, xs)
	p.Y.Min = math.Min(p.Y.Min, 0)
	p.Y.Max += 0.04 * (p.Y.Max - p.Y.Min)
	key := f.controlKey(r, "s")
	return f.keyed(t, p, key), nil
}

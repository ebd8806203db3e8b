package viz

import (
	"image/color"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// compareCurves: one metric of the runs over their steps on one plot,
// with the pre-trained value when they all share it.
func compareCurves(f *figure, rs []*RunData, m Metric) (*drawing, error) {
	t := newTable("run", "step", "value")
	p := f.newPlot(m.Title+" (validation)", "step (SGD iterations)", m.Unit)
	p.Add(gridLines())
	var key []keyEntry
	var all []float64
	base, same := nan, true
	for i, r := range rs {
		xs := steps(r)
		ys := make([]float64, len(xs))
		for k := range r.Hist.Refreshes {
			ys[k] = m.get(&r.Hist.Refreshes[k])
			t.add(ys[k], r.Label(), itoa(r.Hist.Refreshes[k].Step))
		}
		if i == 0 {
			base = ys[0]
		} else {
			same = same && ys[0] == base
		}
		all = append(all, xs...)
		key = append(key, keyEntry{r.Label(), series(p, xs, ys, policyStyle(r.Policy, seriesColor(i), 1.2), false)})
	}
	if same && finite(base) && len(rs) > 0 {
		// Runs forked from the same checkpoint share one baseline.
		p.Add(hline{base, lineStyle(grey, 0.8, 3, 2)})
		key = append(key, keyEntry{"pre-trained", hline{style: lineStyle(grey, 0.8, 3, 2)}})
	}
	setXRange(p, all)
	return f.keyed(t, p, key), nil
}

// policyDashes gives every policy its own line pattern, so runs of two
// policies differ in print and to a colour-blind reader, not by colour
// alone (selmix and greedy were both blue-green solid lines): selmix
// solid, the others dashed or dotted each their way; a policy unknown
// here (as of an older reader) dash-dot-dot.
var policyDashes = map[string][]vg.Length{
	"selmix":  nil,
	"uniform": {4, 2},
	"greedy":  {1, 1.5},
	"none":    {6, 2, 1, 2},
	"csst":    {8, 3},
	"mislas2": {3, 1.5, 1, 1.5},
}

// policyStyle is the line of a run of policy in colour c.
func policyStyle(policy string, c color.Color, width vg.Length) draw.LineStyle {
	d, ok := policyDashes[policy]
	if !ok && policy != "" {
		d = []vg.Length{5, 1.5, 1, 1.5, 1, 1.5}
	}
	return draw.LineStyle{Color: c, Width: width, Dashes: d}
}

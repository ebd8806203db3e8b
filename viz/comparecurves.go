package viz

import (
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
		key = append(key, keyEntry{r.Label(), series(p, xs, ys, lineStyle(seriesColor(i), 1.2), false)})
	}
	if same && finite(base) && len(rs) > 0 {
		// Runs forked from the same checkpoint share one baseline.
		p.Add(hline{base, lineStyle(grey, 0.8, 3, 2)})
		key = append(key, keyEntry{"pre-trained", hline{style: lineStyle(grey, 0.8, 3, 2)}})
	}
	setXRange(p, all)
	return &drawing{table: t, draw: func(c draw.Canvas) {
		c, p := f.drawTitle(c, p)
		c = f.drawKey(c, key)
		p.Draw(c)
	}}, nil
}

package viz

import (
	"errors"
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"selmix/internal/safetext"
)

// SeedGroup is one configuration of a sweep: a label for the legend and
// the runs of its seeds.
type SeedGroup struct {
	Label string
	Runs  []*RunData
}

// SweepCurves writes sweep-<m>: per group, the mean of m over its seeds
// at every refresh as a line inside a band of ± one sample standard
// deviation, and the pre-trained model's value (the refresh at step 0,
// averaged over the seeds) as a dashed line: one grey line when every
// group starts from the same value, else one per group in its colour.
// Seeds are aligned by refresh; a group's curve ends where its shortest
// seed ends.
func SweepCurves(gs []SeedGroup, m Metric, dir string, o Options) (*Result, error) {
	if len(gs) == 0 {
		return nil, errors.New("sweep curves: no groups")
	}
	o, err := prepare(o, dir)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	f := newFigure(o, colWidth, 2.8*vg.Inch)
	name := "sweep-" + safetext.FileName(m.Name)
	if err := write(res, dir, name, f, func() (*drawing, error) { return sweepCurves(f, gs, m) }); err != nil {
		return res, fmt.Errorf("%s: %w", name, err)
	}
	return res, nil
}

// seedStats is a group's mean and sample std of m at each refresh its
// seeds all have, and of their pre-trained values.
type seedStats struct {
	xs, mean, std []float64
	n             int
	base          float64
}

func groupStats(g SeedGroup, m Metric) seedStats {
	var st seedStats
	var runs []*RunData
	for _, r := range g.Runs {
		if r != nil && len(r.Hist.Refreshes) > 0 {
			runs = append(runs, r)
		}
	}
	st.n = len(runs)
	if st.n == 0 {
		st.base = nan
		return st
	}
	n := len(runs[0].Hist.Refreshes)
	for _, r := range runs[1:] {
		n = min(n, len(r.Hist.Refreshes))
	}
	vals := make([]float64, 0, len(runs))
	meanStd := func(k int) (float64, float64) {
		vals = vals[:0]
		for _, r := range runs {
			if v := m.get(&r.Hist.Refreshes[k]); finite(v) {
				vals = append(vals, v)
			}
		}
		switch len(vals) {
		case 0:
			return nan, nan
		case 1:
			return vals[0], 0
		}
		return stat.MeanStdDev(vals, nil)
	}
	xs := steps(runs[0])
	for k := range n {
		mu, sd := meanStd(k)
		st.xs = append(st.xs, xs[k])
		st.mean = append(st.mean, mu)
		st.std = append(st.std, sd)
	}
	st.base = nan
	if runs[0].Hist.Refreshes[0].Step == 0 {
		st.base = st.mean[0]
	}
	return st
}

func sweepCurves(f *figure, gs []SeedGroup, m Metric) (*drawing, error) {
	t := newTable("group", "step", "std", "seeds", "mean")
	p := f.newPlot(m.Title+" (validation, mean ± std over seeds)", "step (SGD iterations)", m.Unit)
	p.Add(gridLines())
	var key []keyEntry
	var all []float64
	stats := make([]seedStats, len(gs))
	same := true
	for i, g := range gs {
		stats[i] = groupStats(g, m)
		if stats[i].n == 0 {
			continue
		}
		if b0 := stats[0].base; i > 0 && !(stats[i].base == b0 || math.Abs(stats[i].base-b0) < 1e-12) {
			same = false
		}
	}
	drawn := 0
	for i, g := range gs {
		st := stats[i]
		if st.n == 0 {
			continue
		}
		c := seriesColor(i)
		if band := bandPolygon(st.xs, st.mean, st.std, c); band != nil {
			p.Add(band)
		}
		t.add(st.base, g.Label, "pre-trained", "", itoa(st.n))
		for k := range st.xs {
			t.add(st.mean[k], g.Label, itoa(int(st.xs[k])), formatValue(st.std[k]), itoa(st.n))
		}
		label := fmt.Sprintf("%s (%d seed%s)", g.Label, st.n, map[bool]string{true: "", false: "s"}[st.n == 1])
		key = append(key, keyEntry{label, series(p, st.xs, st.mean, lineStyle(c, 1.2), false)})
		if !same && finite(st.base) {
			p.Add(hline{st.base, lineStyle(c, 0.8, 3, 2)})
		}
		all = append(all, st.xs...)
		drawn++
	}
	if drawn == 0 {
		return nil, errSkip{"no group has a refresh"}
	}
	switch {
	case same && finite(stats[0].base):
		p.Add(hline{stats[0].base, lineStyle(grey, 0.8, 3, 2)})
		key = append(key, keyEntry{fmt.Sprintf("pre-trained %.4f", stats[0].base), hline{style: lineStyle(grey, 0.8, 3, 2)}})
	case !same:
		key = append(key, keyEntry{"pre-trained (dashed, per group)", hline{style: lineStyle(grey, 0.8, 3, 2)}})
	}
	setXRange(p, all)
	return f.keyed(t, p, key), nil
}

// bandPolygon is the area between mean−std and mean+std, translucent in
// c; nil when fewer than two points are finite. A gap in the mean ends
// the band there.
func bandPolygon(xs, mean, std []float64, c color.Color) *plotter.Polygon {
	var upper, lower plotter.XYs
	for k := range xs {
		if !finite(mean[k]) || !finite(std[k]) {
			break
		}
		upper = append(upper, plotter.XY{X: xs[k], Y: mean[k] + std[k]})
		lower = append(lower, plotter.XY{X: xs[k], Y: mean[k] - std[k]})
	}
	if len(upper) < 2 {
		return nil
	}
	ring := append(plotter.XYs(nil), upper...)
	for k := len(lower) - 1; k >= 0; k-- {
		ring = append(ring, lower[k])
	}
	poly, err := plotter.NewPolygon(ring)
	if err != nil {
		return nil
	}
	r, g, b, _ := c.RGBA()
	poly.Color = color.NRGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 60}
	poly.LineStyle.Width = 0
	return poly
}

package viz

import (
	"errors"
	"fmt"
	"image/color"
	"slices"
	"sort"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"selmix/internal/safetext"
)

// Group is the runs that share one value of a config key.
type Group struct {
	Value string
	Runs  []*RunData
}

// GroupStats is a group's curve: at every step any member refreshed at,
// the mean and sample standard deviation over the members that have a
// value there (each member read between its own refreshes by linear
// interpolation, never beyond its first or last).
type GroupStats struct {
	Steps, Mean, Std []float64
	N                []int // members with a value at each step
}

// Stats computes g's curve of m.
func (g Group) Stats(m Metric) GroupStats {
	type member struct{ xs, ys []float64 }
	var ms []member
	var grid []float64
	for _, r := range g.Runs {
		var mb member
		for i := range r.Hist.Refreshes {
			rf := &r.Hist.Refreshes[i]
			if v := m.get(rf); finite(v) {
				mb.xs, mb.ys = append(mb.xs, float64(rf.Step)), append(mb.ys, v)
			}
		}
		grid = append(grid, mb.xs...)
		ms = append(ms, mb)
	}
	slices.Sort(grid)
	grid = slices.Compact(grid)
	var st GroupStats
	vals := make([]float64, 0, len(ms))
	for _, x := range grid {
		vals = vals[:0]
		for _, mb := range ms {
			if v, ok := interp(mb.xs, mb.ys, x); ok {
				vals = append(vals, v)
			}
		}
		if len(vals) == 0 {
			continue
		}
		mu, sd := meanStd(vals)
		st.Steps, st.Mean, st.Std, st.N = append(st.Steps, x), append(st.Mean, mu), append(st.Std, sd), append(st.N, len(vals))
	}
	return st
}

// interp reads ys over sorted xs at x, linearly between points.
func interp(xs, ys []float64, x float64) (float64, bool) {
	n := len(xs)
	if n == 0 || x < xs[0] || x > xs[n-1] {
		return 0, false
	}
	i := sort.SearchFloat64s(xs, x)
	if xs[i] == x {
		return ys[i], true
	}
	t := (x - xs[i-1]) / (xs[i] - xs[i-1])
	return ys[i-1] + t*(ys[i]-ys[i-1]), true
}

// meanStd is the mean and the sample (n−1) standard deviation
// (stat.MeanStdDev); the std of one value is 0, and none has a NaN mean.
func meanStd(v []float64) (float64, float64) {
	switch len(v) {
	case 0:
		return nan, 0
	case 1:
		return v[0], 0
	}
	return stat.MeanStdDev(v, nil)
}

// CompareGroups writes compare-<m>-by-<key> into dir: one line per group
// of runs, the mean of m over its members, in a ± one standard deviation
// band, and the pre-trained baseline (the mean of every run's first
// refresh, taken before fine-tuning) as a dashed line. Its CSV has the
// group, step, mean, std and how many members each mean is over. Then
// compare-final-by-<key>: compare-final with one bar per group, the mean
// over its runs with ± one sample std whiskers (compareFinalGroups).
func CompareGroups(groups []Group, key string, m Metric, dir string, o Options) (*Result, error) {
	if len(groups) == 0 {
		return nil, errors.New("compare: no runs")
	}
	o, err := prepare(o, dir)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	var errs []error
	f := newFigure(o, colWidth, 2.8*vg.Inch)
	name := "compare-" + safetext.FileName(m.Name) + "-by-" + safetext.FileName(key)
	if err := write(res, dir, name, f, func() (*drawing, error) { return groupCurves(f, groups, key, m) }); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	f = newFigure(o, fullWidth, 3*vg.Inch)
	name = "compare-final-by-" + safetext.FileName(key)
	if err := write(res, dir, name, f, func() (*drawing, error) { return compareFinalGroups(f, groups, key) }); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	return res, errors.Join(errs...)
}

func groupCurves(f *figure, groups []Group, key string, m Metric) (*drawing, error) {
	t := newTable("group", "step", "std", "n", "mean")
	p := f.newPlot(m.Title+" (validation) by "+key, "step (SGD iterations)", m.Unit)
	p.Add(gridLines())
	var keys []keyEntry
	var all []float64
	base, nbase := 0.0, 0
	for i, g := range groups {
		st := g.Stats(m)
		for k := range st.Steps {
			t.add(st.Mean[k], g.Value, itoa(int(st.Steps[k])), formatValue(st.Std[k]), itoa(st.N[k]))
		}
		c := seriesColor(i)
		if b := band(st, c); b != nil && len(st.Steps) > 1 {
			p.Add(b)
		}
		label := fmt.Sprintf("%s=%s (%d)", key, g.Value, len(g.Runs))
		sty := lineStyle(c, 1.2)
		if key == "finetune.policy" {
			sty = policyStyle(g.Value, c, 1.2)
		}
		keys = append(keys, keyEntry{label, series(p, st.Steps, st.Mean, sty, false)})
		all = append(all, st.Steps...)
		for _, r := range g.Runs {
			if v := m.get(&r.Hist.Refreshes[0]); finite(v) && r.Hist.Refreshes[0].Step == 0 {
				base, nbase = base+v, nbase+1
			}
		}
	}
	if nbase > 0 {
		base /= float64(nbase)
		p.Add(hline{base, lineStyle(grey, 0.8, 3, 2)})
		keys = append(keys, keyEntry{"pre-trained", hline{style: lineStyle(grey, 0.8, 3, 2)}})
		t.add(base, "pre-trained", "0", "", "")
	}
	setXRange(p, all)
	return f.keyed(t, p, keys), nil
}

// band is the mean ± std of st as a translucent polygon (nil if it
// cannot be drawn).
func band(st GroupStats, c color.Color) *plotter.Polygon {
	pts := make(plotter.XYs, 0, 2*len(st.Steps))
	for k := range st.Steps {
		pts = append(pts, plotter.XY{X: st.Steps[k], Y: st.Mean[k] + st.Std[k]})
	}
	for k := len(st.Steps) - 1; k >= 0; k-- {
		pts = append(pts, plotter.XY{X: st.Steps[k], Y: st.Mean[k] - st.Std[k]})
	}
	poly, err := plotter.NewPolygon(pts)
	if err != nil {
		return nil
	}
	r, g, b, _ := c.RGBA()
	poly.Color = color.NRGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 60}
	poly.LineStyle.Width = 0
	return poly
}

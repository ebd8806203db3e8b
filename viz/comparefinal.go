package viz

import (
	"errors"
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"selmix/core/loop"
	"selmix/core/metric"
)

// compareFinal: the final metrics of the runs side by side as grouped
// bars (test set when every run has its summary, else the last
// validation refresh), with the shared pre-trained model's when they
// all started from one; on test, each run that kept a model has its test
// at the best step beside its last step's, in a lighter shade of its
// colour and labelled; coverages get a panel of their own.
func compareFinal(f *figure, rs []*RunData) (*drawing, error) {
	test, set := finalSet(rs)
	ms := finalMetrics(rs)
	t := newTable("run", "metric", "value")
	series := finalSeries(rs, ms, test)
	colors := make([]color.Color, len(series))
	for i, s := range series {
		for j, v := range s.vals {
			t.add(v, s.label, ms[j].Name)
		}
		colors[i] = s.color()
	}
	return finalDrawing(f, f.t("final metrics ("+set+")"), ms, series, colors, t), nil
}

// finalSet says which final values compare-final shows of rs: test when
// every run has its summary (with the kept model's where one kept it),
// else the last validation refresh; set says so in the title.
func finalSet(rs []*RunData) (test bool, set string) {
	test = true
	for _, r := range rs {
		test = test && r.Hist.Final != nil
	}
	set = "test set, after fine-tuning"
	for _, r := range rs {
		if test && r.Hist.Final.Best != nil {
			set = "test set: at the last step and at the best step, the model each run keeps"
			break
		}
	}
	if !test {
		set = "validation, last refresh (a run has no final summary)"
	}
	return test, set
}

// finalMetrics are the metrics compare-final shows: the reported ones,
// after ψ of the objective rs share, if they share one.
func finalMetrics(rs []*RunData) []Metric {
	ms := ReportedMetrics()
	if dm := DefaultCompareMetric(rs); dm.obj >= 0 {
		ms = append([]Metric{dm}, ms...)
	}
	return ms
}

// finalDrawing draws series of ms as grouped bars under title, with a
// key, coverages on a panel of their own; t is its CSV.
func finalDrawing(f *figure, title string, ms []Metric, series []barSeries, colors []color.Color, t *table) *drawing {
	recall, coverage := byAxis(ms)
	panel := func(idx []int, ylabel string, w vg.Length) *plot.Plot {
		return finalPanel(f, ms, series, colors, idx, ylabel, w)
	}
	var key []keyEntry
	for i, s := range series {
		key = append(key, keyEntry{s.label, boxThumb{colors[i]}})
	}
	if t.dropped > 0 {
		key = append(key, keyEntry{"not finite (see CSV)", glyphThumb{naGlyph()}})
	}
	return &drawing{table: t, draw: func(c draw.Canvas) {
		sty := plot.New().Title.TextStyle
		sty.Font.Size = titleSize
		c = fillTitle(c, sty, title, 4)
		c = f.drawKey(c, key)
		// Each panel's width follows its number of metrics, plus its y axis.
		const axis = 0.6 * vg.Inch
		width := c.Max.X - c.Min.X
		if len(coverage) == 0 {
			p := panel(recall, "value (fraction)", width)
			p.Y.Max = math.Max(p.Y.Max, 1.02)
			drawPlot(p, c)
			return
		}
		per := (width - 2*axis) / vg.Length(len(ms))
		split := c.Min.X + axis + per*vg.Length(len(recall))
		left, right := c, c
		left.Max.X, right.Min.X = split, split+4
		lp := panel(recall, "recall, accuracy, ψ", split-c.Min.X)
		lp.Y.Max = math.Max(lp.Y.Max, 1.02)
		drawPlot(lp, left)
		drawPlot(panel(coverage, "coverage", c.Max.X-split), right)
	}}
}

// compareFinalGroups is compare-final of groups of runs (grouped by
// config key key): per group, the mean over its runs of each final
// value compare-final shows of a run, with ± one sample standard
// deviation whiskers, and on test the mean at the best step over the
// runs that kept a model beside it, in a lighter shade; the pre-trained
// model's when every run started from one. Its CSV has the group, the
// metric, how many runs each mean is over, the std and the mean.
func compareFinalGroups(f *figure, groups []Group, key string) (*drawing, error) {
	var rs []*RunData
	for _, g := range groups {
		rs = append(rs, g.Runs...)
	}
	if len(rs) == 0 {
		return nil, errors.New("no runs")
	}
	test, set := finalSet(rs)
	ms := finalMetrics(rs)
	t := newTable("group", "metric", "n", "std", "mean")
	var series []barSeries
	if pre, ok := preSeries(rs, ms, test); ok {
		series = append(series, pre)
	}
	for i, g := range groups {
		label := fmt.Sprintf("%s=%s (%d)", key, g.Value, len(g.Runs))
		end := groupBars(label, i, false, ms, g.Runs, func(r *RunData, m Metric) float64 { return finalValue(r, m, test) })
		kept := false
		for _, r := range g.Runs {
			kept = kept || test && r.Hist.Final.Best != nil
		}
		if !kept {
			series = append(series, end)
			continue
		}
		end.label += " at the end"
		series = append(series, end, groupBars(label+" at best", i, true, ms, g.Runs, func(r *RunData, m Metric) float64 {
			if r.Hist.Final.Best == nil {
				return nan
			}
			return bestValue(r.Hist.Final.Best, m)
		}))
	}
	colors := make([]color.Color, len(series))
	for i, s := range series {
		for j, v := range s.vals {
			if s.std == nil {
				t.add(v, s.label, ms[j].Name, "", "")
			} else {
				t.add(v, s.label, ms[j].Name, itoa(s.n[j]), formatValue(s.std[j]))
			}
		}
		colors[i] = s.color()
	}
	title := f.t(fmt.Sprintf("final metrics by %s: mean ± std over each group's runs (%s)", key, set))
	return finalDrawing(f, title, ms, series, colors, t), nil
}

// groupBars is a group's bars: for each of ms, the mean and sample std
// (0 for one) of value over the runs that have a finite one, and how
// many have; NaN for none.
func groupBars(label string, group int, best bool, ms []Metric, rs []*RunData, value func(*RunData, Metric) float64) barSeries {
	s := barSeries{label: label, run: group, best: best,
		vals: make([]float64, len(ms)), std: make([]float64, len(ms)), n: make([]int, len(ms))}
	for j, m := range ms {
		var xs []float64
		for _, r := range rs {
			if v := value(r, m); finite(v) {
				xs = append(xs, v)
			}
		}
		s.n[j] = len(xs)
		if len(xs) == 0 {
			s.vals[j], s.std[j] = nan, nan
			continue
		}
		s.vals[j], s.std[j] = meanStd(xs)
	}
	return s
}

// barSeries is one group member of compare-final: a run (or a group of
// runs), or the pre-trained model, with a value per metric.
type barSeries struct {
	label string
	vals  []float64
	run   int  // the run's index in rs (the group's); -1 for the pre-trained model
	best  bool // the run's kept model (its best step) rather than its end
	// std and n are, for a group, each mean's sample std and how many
	// runs it is over; nil for a run.
	std []float64
	n   []int
}

// color is the series' bar colour: grey for the pre-trained model, the
// run's (group's) colour, lighter for its kept model.
func (s barSeries) color() color.Color {
	switch {
	case s.run < 0:
		return preColor
	case s.best:
		return lighter(seriesColor(s.run))
	}
	return seriesColor(s.run)
}

// lighter is c halfway to white: a run's kept model beside its end.
func lighter(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	mix := func(v uint32) uint8 { return uint8((v>>8 + 255) / 2) }
	return color.NRGBA{mix(r), mix(g), mix(b), 255}
}

// finalSeries are the bars of compare-final: the pre-trained model's
// first when every run started from the same one (test only), then each
// run's final value of each of ms.
func finalSeries(rs []*RunData, ms []Metric, test bool) []barSeries {
	series := make([]barSeries, 0, len(rs)+1)
	if pre, ok := preSeries(rs, ms, test); ok {
		series = append(series, pre)
	}
	for i, r := range rs {
		vals := make([]float64, len(ms))
		for j, m := range ms {
			vals[j] = finalValue(r, m, test)
		}
		b := (*loop.Best)(nil)
		if test {
			b = r.Hist.Final.Best
		}
		if b == nil {
			series = append(series, barSeries{label: r.Label(), vals: vals, run: i})
			continue
		}
		series = append(series, barSeries{label: r.Label() + " at the end", vals: vals, run: i})
		bv := make([]float64, len(ms))
		for j, m := range ms {
			bv[j] = bestValue(b, m)
		}
		series = append(series, barSeries{label: fmt.Sprintf("%s at best (step %d)", r.Label(), b.Step), vals: bv, run: i, best: true})
	}
	return series
}

// preSeries is the pre-trained model's bars, on test when every run of
// rs started from the same one.
func preSeries(rs []*RunData, ms []Metric, test bool) (barSeries, bool) {
	if !test {
		return barSeries{}, false
	}
	for _, r := range rs[1:] {
		if !sameReport(r.Hist.Final.TestBefore, rs[0].Hist.Final.TestBefore) {
			return barSeries{}, false
		}
	}
	vals := make([]float64, len(ms))
	fb := rs[0].Hist.Final
	for j, m := range ms {
		if m.final != nil {
			vals[j] = m.final(&fb.TestBefore)
		} else if m.obj >= 0 && m.obj < len(fb.TestObjBefore) {
			vals[j] = fb.TestObjBefore[m.obj]
		} else {
			vals[j] = nan
		}
	}
	return barSeries{label: "pre-trained", vals: vals, run: -1}, true
}

// bestValue is m of a run's kept model on test.
func bestValue(b *loop.Best, m Metric) float64 {
	switch {
	case m.final != nil:
		return m.final(&b.Test)
	case m.obj >= 0 && m.obj < len(b.TestObj):
		return b.TestObj[m.obj]
	}
	return nan
}

// finalPanel draws the metrics idx of ms as grouped bars (one per
// series) on a plot of width w.
func finalPanel(f *figure, ms []Metric, series []barSeries, colors []color.Color, idx []int, ylabel string, w vg.Length) *plot.Plot {
	n := len(series)
	p := f.newPlot("", "", ylabel)
	g := gridLines()
	g.Vertical.Color = nil // lines between groups would cut through bars
	p.Add(g)
	// The data area is the width less the y axis (about 0.6 in); each
	// group fills 75% of its slot.
	bw := (w - 0.6*vg.Inch) / vg.Length(len(idx)) * 0.75 / vg.Length(n)
	for i, s := range series {
		vals := make([]float64, len(idx))
		for k, j := range idx {
			vals[k] = s.vals[j]
		}
		gl := naGlyph()
		gl.Color = colors[i]
		off := (vg.Length(i) - vg.Length(n-1)/2) * bw
		addBars(p, vals, bw, off, colors[i], gl)
		if s.std != nil {
			sd := make([]float64, len(idx))
			for k, j := range idx {
				sd[k] = s.std[j]
			}
			p.Add(whiskers{mean: vals, std: sd, offset: off, cap: min(bw/3, 3), style: lineStyle(whiskerColor, 0.8)})
		}
	}
	names := make([]string, len(idx))
	for k, j := range idx {
		names[k] = f.t(ms[j].Title)
	}
	p.NominalX(names...)
	rotateX(p, max(len(ms), 5)) // both panels' labels at one angle
	p.X.Min, p.X.Max = -0.5, float64(len(idx))-0.5
	p.Y.Min = math.Min(p.Y.Min, 0)
	fixYRange(p)
	return p
}

// byAxis splits metrics (by index) between the two axes of compare-final:
// coverages (a few hundredths) get an axis of their own, on which their
// bars are not slivers as on recall's 0–1 axis.
func byAxis(ms []Metric) (recall, coverage []int) {
	for j, m := range ms {
		if m.Unit == "coverage" {
			coverage = append(coverage, j)
		} else {
			recall = append(recall, j)
		}
	}
	return recall, coverage
}

func sameReport(a, b metric.Report) bool {
	return a.MeanRecall == b.MeanRecall && a.MinRecall == b.MinRecall && a.Accuracy == b.Accuracy &&
		a.HMean == b.HMean && a.MinCoverage == b.MinCoverage
}

// whiskerColor draws ± std whiskers over bars.
var whiskerColor = color.NRGBA{40, 40, 40, 255}

// whiskers mark mean ± std over bars (offset as the bars are): a
// vertical line with a cap at each end; none where either is not finite
// or the std is 0.
type whiskers struct {
	mean, std   []float64
	offset, cap vg.Length
	style       draw.LineStyle
}

func (w whiskers) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	for x := range w.mean {
		m, s := w.mean[x], w.std[x]
		if !finite(m) || !finite(s) || s == 0 {
			continue
		}
		px := tx(float64(x)) + w.offset
		lo, hi := ty(m-s), ty(m+s)
		c.StrokeLine2(w.style, px, lo, px, hi)
		c.StrokeLine2(w.style, px-w.cap, lo, px+w.cap, lo)
		c.StrokeLine2(w.style, px-w.cap, hi, px+w.cap, hi)
	}
}

// DataRange makes room for the whiskers' ends.
func (w whiskers) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = 0, float64(len(w.mean)-1)
	ymin, ymax = math.Inf(1), math.Inf(-1)
	for x, m := range w.mean {
		if s := w.std[x]; finite(m) && finite(s) {
			ymin, ymax = math.Min(ymin, m-s), math.Max(ymax, m+s)
		}
	}
	return xmin, xmax, ymin, ymax
}

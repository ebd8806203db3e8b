package viz

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"selmix/core/atomicfile"
	"selmix/core/metric"
	"selmix/core/safetext"
)

// File is one written figure.
type File struct {
	Name          string    // file name of the figure inside the output directory
	CSV           string    // file name of its CSV
	Width, Height vg.Length // size on paper
	Pixels        [2]int    // png only: width and height in pixels
}

// Result lists what an export wrote and what it has to say about it
// (figures skipped, values that could not be plotted).
type Result struct {
	Files []File
	Notes []string
}

type figSpec struct {
	name string
	w, h vg.Length
	make func(f *figure, r *RunData) (*drawing, error)
	// height, if set, overrides h for a run (a figure with more panels).
	height func(r *RunData) vg.Length
}

// runFigures are the figures of one run, in the order of the issue.
var runFigures = []figSpec{
	{"metrics", fullWidth, 5 * vg.Inch, metricsFigure, nil},
	{"per-class", fullWidth, 4 * vg.Inch, perClassFigure, func(r *RunData) vg.Length {
		if r.K > maxClassBars {
			return 6 * vg.Inch // the histogram of every class goes below
		}
		return 4 * vg.Inch
	}},
	{"gain", fullWidth, 2.7 * vg.Inch, func(f *figure, r *RunData) (*drawing, error) { return heatFigure(f, r, "G") }, nil},
	{"mixup", fullWidth, 2.7 * vg.Inch, func(f *figure, r *RunData) (*drawing, error) { return heatFigure(f, r, "P") }, nil},
	{"lambda", fullWidth, 3 * vg.Inch, lambdaFigure, nil},
	{"s", colWidth, 2.4 * vg.Inch, sFigure, nil},
	{"linear", fullWidth, 4.2 * vg.Inch, linearFigure, nil},
}

// FigureNames lists the figures Export writes, as file names without
// extension.
func FigureNames() []string {
	out := make([]string, len(runFigures))
	for i, s := range runFigures {
		out[i] = s.name
	}
	return out
}

// Export writes every figure of r, each with its CSV, into dir (created
// if missing). A figure that fails is reported and the others are still
// written; the error joins every failure.
func Export(r *RunData, dir string, o Options) (*Result, error) {
	o, err := prepare(o, dir)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	for _, w := range r.Hist.Warnings {
		res.Notes = append(res.Notes, "log: "+w.String())
	}
	var errs []error
	for _, s := range runFigures {
		h := s.h
		if s.height != nil {
			h = s.height(r)
		}
		f := newFigure(o, s.w, h)
		if err := write(res, dir, s.name, f, func() (*drawing, error) { return s.make(f, r) }); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.name, err))
		}
	}
	return res, errors.Join(errs...)
}

// write draws one figure and writes it and its CSV.
func write(res *Result, dir, name string, f *figure, mk func() (*drawing, error)) error {
	var d *drawing
	var mkErr error
	err := drawSafely(func() { d, mkErr = mk() })
	if err == nil {
		err = mkErr
	}
	var skip errSkip
	if errors.As(err, &skip) {
		res.Notes = append(res.Notes, fmt.Sprintf("%s: skipped: %s", name, skip.reason))
		return nil
	}
	if err != nil {
		return err
	}
	b, err := f.render(d.draw)
	if err != nil {
		return err
	}
	file := File{Name: name + "." + f.opts.Format, CSV: name + ".csv", Width: f.w, Height: f.h}
	if f.opts.Format == "png" {
		file.Pixels = [2]int{int(math.Ceil(float64(f.w/vg.Inch) * float64(f.opts.DPI))), int(math.Ceil(float64(f.h/vg.Inch) * float64(f.opts.DPI)))}
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, file.Name), b); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, file.CSV), d.table.bytes()); err != nil {
		return err
	}
	if d.table.dropped > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%s: %d values not finite, left out of the figure (marked in %s)", name, d.table.dropped, file.CSV))
	}
	res.Files = append(res.Files, file)
	return nil
}

// DefaultCompareMetric is ψ of the objective every run optimized, or mean
// recall when they differ.
func DefaultCompareMetric(rs []*RunData) Metric {
	for _, r := range rs[1:] {
		if r.Objective != rs[0].Objective {
			return ReportedMetrics()[0]
		}
	}
	return ObjectiveMetric(rs[0].Objective)
}

// Compare writes the comparison figures of several runs into dir: one
// curve per run of m over steps (compare-<m>), and the final value of
// every reported metric per run as grouped bars (compare-final).
func Compare(rs []*RunData, m Metric, dir string, o Options) (*Result, error) {
	if len(rs) == 0 {
		return nil, errors.New("compare: no runs")
	}
	o, err := prepare(o, dir)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	var errs []error
	f := newFigure(o, colWidth, 2.8*vg.Inch)
	name := "compare-" + safetext.FileName(m.Name)
	if err := write(res, dir, name, f, func() (*drawing, error) { return compareCurves(f, rs, m) }); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	f = newFigure(o, fullWidth, 3*vg.Inch)
	if err := write(res, dir, "compare-final", f, func() (*drawing, error) { return compareFinal(f, rs) }); err != nil {
		errs = append(errs, fmt.Errorf("compare-final: %w", err))
	}
	return res, errors.Join(errs...)
}

// prepare resolves o's defaults and creates the output directory.
func prepare(o Options, dir string) (Options, error) {
	o, err := o.withDefaults()
	if err != nil {
		return o, err
	}
	return o, os.MkdirAll(dir, 0o755)
}

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

func compareFinal(f *figure, rs []*RunData) (*drawing, error) {
	test := true
	for _, r := range rs {
		test = test && r.Hist.Final != nil
	}
	set := "test set, after fine-tuning"
	if !test {
		set = "validation, last refresh (a run has no final summary)"
	}
	ms := ReportedMetrics()
	// A shared objective is compared too.
	if dm := DefaultCompareMetric(rs); dm.obj >= 0 {
		ms = append([]Metric{dm}, ms...)
	}
	t := newTable("run", "metric", "value")
	series := make([]struct {
		label string
		vals  []float64
	}, 0, len(rs)+1)
	// The pre-trained model, when every run started from the same one.
	if test {
		same := true
		for _, r := range rs[1:] {
			same = same && sameReport(r.Hist.Final.TestBefore, rs[0].Hist.Final.TestBefore)
		}
		if same {
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
			series = append(series, struct {
				label string
				vals  []float64
			}{"pre-trained", vals})
		}
	}
	for _, r := range rs {
		vals := make([]float64, len(ms))
		for j, m := range ms {
			vals[j] = finalValue(r, m, test)
		}
		series = append(series, struct {
			label string
			vals  []float64
		}{r.Label(), vals})
	}
	colors := make([]color.Color, len(series))
	for i, s := range series {
		for j, v := range s.vals {
			t.add(v, s.label, ms[j].Name)
		}
		colors[i] = seriesColor(i)
		if s.label == "pre-trained" {
			colors[i] = preColor
		} else if series[0].label == "pre-trained" {
			colors[i] = seriesColor(i - 1)
		}
	}
	recall, coverage := byAxis(ms)
	n := len(series)
	// panel draws the metrics idx as grouped bars on a plot of width w.
	panel := func(idx []int, ylabel string, w vg.Length) *plot.Plot {
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
			addBars(p, vals, bw, (vg.Length(i)-vg.Length(n-1)/2)*bw, colors[i], gl)
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
	var key []keyEntry
	for i, s := range series {
		key = append(key, keyEntry{s.label, boxThumb{colors[i]}})
	}
	if t.dropped > 0 {
		key = append(key, keyEntry{"not finite (see CSV)", glyphThumb{naGlyph()}})
	}
	title := f.t("final metrics (" + set + ")")
	return &drawing{table: t, draw: func(c draw.Canvas) {
		sty := plot.New().Title.TextStyle
		sty.Font.Size = titleSize
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
		c.FillText(sty, vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: c.Max.Y - 1}, title)
		c.Max.Y -= sty.Rectangle(title).Size().Y + 4
		c = f.drawKey(c, key)
		// Each panel's width follows its number of metrics, plus its y axis.
		const axis = 0.6 * vg.Inch
		width := c.Max.X - c.Min.X
		if len(coverage) == 0 {
			p := panel(recall, "value (fraction)", width)
			p.Y.Max = math.Max(p.Y.Max, 1.02)
			p.Draw(c)
			return
		}
		per := (width - 2*axis) / vg.Length(len(ms))
		split := c.Min.X + axis + per*vg.Length(len(recall))
		left, right := c, c
		left.Max.X, right.Min.X = split, split+4
		lp := panel(recall, "recall, accuracy, ψ", split-c.Min.X)
		lp.Y.Max = math.Max(lp.Y.Max, 1.02)
		lp.Draw(left)
		panel(coverage, "coverage", c.Max.X-split).Draw(right)
	}}, nil
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

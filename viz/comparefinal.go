package viz

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"selmix/core/metric"
	"selmix/core/train"
)

// compareFinal: the final metrics of the runs side by side as grouped
// bars (test set when every run has its summary, else the last
// validation refresh), with the shared pre-trained model's when they
// all started from one; on test, each run that kept a model has its test
// at the best step beside its last step's, in a lighter shade of its
// colour and labelled; coverages get a panel of their own.
func compareFinal(f *figure, rs []*RunData) (*drawing, error) {
	test := true
	for _, r := range rs {
		test = test && r.Hist.Final != nil
	}
	set := "test set, after fine-tuning"
	for _, r := range rs {
		if test && r.Hist.Final.Best != nil {
			set = "test set: at the last step and at the best step, the model each run keeps"
			break
		}
	}
	if !test {
		set = "validation, last refresh (a run has no final summary)"
	}
	ms := ReportedMetrics()
	// A shared objective is compared too.
	if dm := DefaultCompareMetric(rs); dm.obj >= 0 {
		ms = append([]Metric{dm}, ms...)
	}
	t := newTable("run", "metric", "value")
	series := finalSeries(rs, ms, test)
	colors := make([]color.Color, len(series))
	for i, s := range series {
		for j, v := range s.vals {
			t.add(v, s.label, ms[j].Name)
		}
		switch {
		case s.run < 0:
			colors[i] = preColor
		case s.best:
			colors[i] = lighter(seriesColor(s.run))
		default:
			colors[i] = seriesColor(s.run)
		}
	}
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
	title := f.t("final metrics (" + set + ")")
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
	}}, nil
}

// barSeries is one group member of compare-final: a run, or the
// pre-trained model, with a value per metric.
type barSeries struct {
	label string
	vals  []float64
	run   int  // the run's index in rs; -1 for the pre-trained model
	best  bool // the run's kept model (its best step) rather than its end
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
			series = append(series, barSeries{"pre-trained", vals, -1, false})
		}
	}
	for i, r := range rs {
		vals := make([]float64, len(ms))
		for j, m := range ms {
			vals[j] = finalValue(r, m, test)
		}
		b := (*train.Best)(nil)
		if test {
			b = r.Hist.Final.Best
		}
		if b == nil {
			series = append(series, barSeries{r.Label(), vals, i, false})
			continue
		}
		series = append(series, barSeries{r.Label() + " at the end", vals, i, false})
		bv := make([]float64, len(ms))
		for j, m := range ms {
			switch {
			case m.final != nil:
				bv[j] = m.final(&b.Test)
			case m.obj >= 0 && m.obj < len(b.TestObj):
				bv[j] = b.TestObj[m.obj]
			default:
				bv[j] = nan
			}
		}
		series = append(series, barSeries{fmt.Sprintf("%s at best (step %d)", r.Label(), b.Step), bv, i, true})
	}
	return series
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

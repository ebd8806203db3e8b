package viz

import (
	"fmt"
	"image/color"
	"math"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"selmix/core/metric"
)

// beforeAfter are the reports the per-class figure compares: test set
// from the final summary if the run finished, else validation at the
// first and last refresh.
func beforeAfter(r *RunData) (before, after metric.Report, set string) {
	if f := r.Hist.Final; f != nil && len(f.TestAfter.Recall) == r.K && len(f.TestBefore.Recall) == r.K {
		return f.TestBefore, f.TestAfter, "test"
	}
	rs := r.Hist.Refreshes
	return rs[0].Stats.Report, rs[len(rs)-1].Stats.Report, "validation"
}

// shownClasses are the classes the per-class bars show, in plot order: all
// of them, or the worst and the best by rec, worst first (a recall that
// is not finite counts as worst, so it is seen).
func shownClasses(rec []float64, K int) []int {
	idx := make([]int, K)
	for i := range idx {
		idx[i] = i
	}
	if K <= maxClassBars {
		return idx
	}
	key := func(i int) float64 {
		if i >= len(rec) || !finite(rec[i]) {
			return math.Inf(-1)
		}
		return rec[i]
	}
	sort.SliceStable(idx, func(a, b int) bool { return key(idx[a]) < key(idx[b]) })
	return append(idx[:worstShown:worstShown], idx[K-bestShown:]...)
}

// perClassFigure: recall and coverage per class, pre-trained vs
// fine-tuned, as grouped bars, with the α/K coverage target; with many
// classes, the worst and best ones and a histogram of every class's
// recall. The CSV has every class.
func perClassFigure(f *figure, r *RunData) (*drawing, error) {
	before, after, set := beforeAfter(r)
	last := r.Hist.Refreshes[len(r.Hist.Refreshes)-1]
	target := last.Hyper.Alpha / float64(r.K)
	t := newTable("quantity", "class", "model", "value")
	shown := shownClasses(after.Recall, r.K)
	many := len(shown) < r.K
	names := classTicks(r, 12)
	if many {
		names = make([]string, len(shown))
		for i, c := range shown {
			names[i] = f.t(r.ClassNames[c])
			if len([]rune(names[i])) > 14 {
				names[i] = string([]rune(names[i])[:13]) + "…"
			}
		}
	}
	mk := func(q string, get func(metric.Report) []float64, bottom bool) *plot.Plot {
		xl := ""
		if bottom {
			xl = "class"
			if many {
				xl = fmt.Sprintf("the %d classes of lowest and the %d of highest fine-tuned recall, of %d", worstShown, bestShown, r.K)
			}
		}
		p := f.newPlot("", xl, set+" "+q+" (fraction)")
		g := gridLines()
		g.Vertical.Color = nil // lines between classes would cut through the bars
		p.Add(g)
		w := barWidth(f, len(shown))
		for k, m := range []struct {
			name string
			rep  metric.Report
			c    color.Color
		}{{"pre-trained", before, preColor}, {"fine-tuned", after, postColor}} {
			vals := padded(get(m.rep), r.K)
			for i, v := range vals {
				t.add(v, q, r.ClassNames[i], m.name)
			}
			bars := make([]float64, len(shown))
			for x, c := range shown {
				bars[x] = vals[c]
			}
			addBars(p, bars, w, (vg.Length(k)-0.5)*w, m.c, naGlyph())
		}
		if q == "coverage" && finite(target) {
			p.Add(hline{target, lineStyle(emphasis, 1, 4, 2)})
			t.add(target, "coverage target α/K", "all", "")
		}
		if many {
			p.Add(vline{x: worstShown - 0.5, style: lineStyle(grey, 0.8, 2, 2)})
		}
		p.NominalX(names...)
		if bottom {
			rotateX(p, len(shown))
		} else {
			p.X.Tick.Label.Font.Size = 0.01
			p.X.Tick.Label.Color = nil
		}
		p.X.Min, p.X.Max = -0.5, float64(len(shown))-0.5
		p.Y.Min = 0
		fixYRange(p)
		p.Y.Max *= 1.05 // headroom: the tallest bar should not touch the frame
		return p
	}
	top := mk("recall", func(r metric.Report) []float64 { return r.Recall }, false)
	bot := mk("coverage", func(r metric.Report) []float64 { return r.Coverage }, true)
	top.Y.Max = math.Max(top.Y.Max, 1.02)
	grid := [][]*plot.Plot{{top}, {bot}}
	if many {
		grid = append(grid, []*plot.Plot{recallHistogram(f, t, r, before, after, set)})
	}
	// Constraints read as constraints: how many classes meet the bound.
	bound := metric.Params{Alpha: last.Hyper.Alpha}.Bound(r.K)
	nBefore, nAfter := before.CoverageMet(bound), after.CoverageMet(bound)
	t.add(float64(nBefore), "classes at coverage ≥ α/K", "all", "pre-trained")
	t.add(float64(nAfter), "classes at coverage ≥ α/K", "all", "fine-tuned")
	key := []keyEntry{
		{"pre-trained", boxThumb{preColor}},
		{"fine-tuned", boxThumb{postColor}},
		{fmt.Sprintf("coverage bound α/K = %.3g: %d of %d classes meet it fine-tuned (%d pre-trained)", target, nAfter, r.K, nBefore), hline{style: lineStyle(emphasis, 1, 4, 2)}},
	}
	if t.dropped > 0 {
		key = append(key, keyEntry{"not finite (see CSV)", glyphThumb{naGlyph()}})
	}
	return &drawing{table: t, draw: func(c draw.Canvas) {
		c = f.drawKey(c, key)
		f.drawGrid(c, grid)
	}}, nil
}

// histBins is the number of recall bins of the per-class histogram.
const histBins = 20

// recallHistogram: how many classes have each recall, before and after,
// over every class; its bins go into t.
func recallHistogram(f *figure, t *table, r *RunData, before, after metric.Report, set string) *plot.Plot {
	p := f.newPlot("", fmt.Sprintf("%s recall, all %d classes", set, r.K), "classes")
	g := gridLines()
	g.Vertical.Color = nil
	p.Add(g)
	w := (f.dw() - vg.Inch) / histBins * 0.37
	names := make([]string, histBins)
	for b := range names {
		if b%2 == 0 {
			names[b] = strconv.FormatFloat(float64(b)/histBins, 'f', 1, 64)
		}
	}
	for k, m := range []struct {
		name string
		rep  metric.Report
		c    color.Color
	}{{"pre-trained", before, preColor}, {"fine-tuned", after, postColor}} {
		counts := make(plotter.Values, histBins)
		for _, v := range padded(m.rep.Recall, r.K) {
			if !finite(v) {
				continue // counted nowhere; the bars above mark it
			}
			b := int(math.Floor(v * histBins))
			counts[max(0, min(b, histBins-1))]++
		}
		for b, n := range counts {
			t.add(n, "classes with recall in bin", fmt.Sprintf("[%.2f, %.2f)", float64(b)/histBins, float64(b+1)/histBins), m.name)
		}
		bc, err := plotter.NewBarChart(counts, w)
		if err != nil {
			panic(err) // counts are finite
		}
		bc.Color = m.c
		bc.LineStyle.Width = 0
		bc.Offset = (vg.Length(k) - 0.5) * w
		p.Add(bc)
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, histBins-0.5
	p.Y.Min = 0
	fixYRange(p)
	return p
}

func padded(v []float64, k int) []float64 {
	out := make([]float64, k)
	for i := range out {
		out[i] = nan
		if i < len(v) {
			out[i] = v[i]
		}
	}
	return out
}

func barWidth(f *figure, k int) vg.Length {
	// Data area is roughly the figure width less the y axis; two bars per
	// class fill 70% of each class's slot.
	return (f.dw() - vg.Inch) / vg.Length(k) * 0.37
}

// Beyond maxClassBars classes, per-class figures show the worstShown
// classes and the bestShown ones (by fine-tuned recall) and a histogram
// of all: a thousand bars cannot be read.
const (
	maxClassBars = 40
	worstShown   = 30
	bestShown    = 10
)

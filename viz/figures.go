package viz

import (
	"fmt"
	"image/color"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"selmix/core/metric"
	"selmix/core/train"
	"selmix/runs/record"
)

// drawing is a figure ready to render plus the CSV of what it plots.
type drawing struct {
	draw  func(c draw.Canvas)
	table *table
}

// errSkip says a figure does not apply to a run (no multipliers to draw).
type errSkip struct{ reason string }

func (e errSkip) Error() string { return e.reason }

func steps(r *Run) []float64 {
	xs := make([]float64, len(r.Hist.Refreshes))
	for i, rf := range r.Hist.Refreshes {
		xs[i] = float64(rf.Step)
	}
	return xs
}

// controlsShown are the controls that changed the run: accepted sets and
// stops (pause/resume change timing only).
func controlsShown(r *Run) []train.Ack {
	var out []train.Ack
	for _, a := range r.Hist.Controls {
		if a.Err == "" && (a.Control.Op == train.OpSet || a.Control.Op == train.OpStop) {
			out = append(out, a)
		}
	}
	return out
}

// addControls marks every control change on p (or only those of key
// only) with a vertical line; what changed is said in the key and the CSV,
// never written over the data.
func (f *figure) addControls(p *plot.Plot, r *Run, only string) {
	for _, a := range controlsShown(r) {
		if only != "" && a.Control.Key != only {
			continue
		}
		p.Add(vline{x: float64(a.Step), style: ctlStyle()})
	}
}

// Dotted, where baselines are dashed, so the two never read alike.
func ctlStyle() draw.LineStyle { return lineStyle(ctlColor, 0.7, 0.7, 1.6) }

// controlKey is the key entry for the control marks: each change and its
// step, or a count when there are too many to list.
func (f *figure) controlKey(r *Run, only string) []keyEntry {
	var parts []string
	for _, a := range controlsShown(r) {
		if only == "" || a.Control.Key == only {
			parts = append(parts, fmt.Sprintf("%s at step %d", a.Control, a.Step))
		}
	}
	switch {
	case len(parts) == 0:
		return nil
	case len(parts) > 3:
		return []keyEntry{{fmt.Sprintf("%d control changes (listed in the CSV)", len(parts)), vline{style: ctlStyle()}}}
	}
	return []keyEntry{{strings.Join(parts, "; "), vline{style: ctlStyle()}}}
}

// noteControls lists the control changes in a figure's CSV.
func noteControls(t *table, r *Run, only string, fields int) {
	for _, a := range controlsShown(r) {
		if only == "" || a.Control.Key == only {
			row := []string{"control", itoa(a.Step)}
			for len(row) < fields {
				row = append(row, "")
			}
			t.addNote(a.Control.String(), row...)
		}
	}
}

// optimizedNames is the optimized objective, or each one in turn when a
// control changed it.
func optimizedNames(r *Run) string {
	var objs []string
	for _, rf := range r.Hist.Refreshes {
		o := string(rf.Hyper.Objective)
		if len(objs) == 0 || objs[len(objs)-1] != o {
			objs = append(objs, o)
		}
	}
	return strings.Join(objs, " → ")
}

// metricsFigure: ψ of the optimized objective and every reported metric
// over steps, one small panel each, with the pre-trained value dashed.
func metricsFigure(f *figure, r *Run) (*drawing, error) {
	xs := steps(r)
	type panel struct {
		m          Metric
		emphasised bool
	}
	psi := Metric{Name: "psi", Title: "ψ " + optimizedNames(r) + " (optimized)", Unit: "ψ", obj: -1,
		get: func(rf *record.Refresh) float64 { return rf.Stats.Psi }}
	panels := []panel{{psi, true}}
	for _, m := range ReportedMetrics() {
		opt := false
		for _, rf := range r.Hist.Refreshes {
			opt = opt || string(rf.Hyper.Objective) == m.Name
		}
		panels = append(panels, panel{m, opt})
	}
	t := newTable("metric", "step", "value")
	cols := 3
	rows := (len(panels) + cols - 1) / cols
	plots := make([][]*plot.Plot, rows)
	for i := range plots {
		plots[i] = make([]*plot.Plot, cols)
	}
	for i, pn := range panels {
		ys := make([]float64, len(xs))
		for k := range r.Hist.Refreshes {
			ys[k] = pn.m.get(&r.Hist.Refreshes[k])
			t.add(ys[k], pn.m.Name, itoa(r.Hist.Refreshes[k].Step))
		}
		title := pn.m.Title
		xl := ""
		if i/cols == rows-1 {
			xl = "step (SGD iterations)"
		}
		p := f.newPlot(title, xl, pn.m.Unit)
		p.Add(gridLines())
		if finite(ys[0]) {
			p.Add(hline{ys[0], lineStyle(grey, 0.8, 3, 2)})
		}
		sty := lineStyle(postColor, 1)
		if pn.emphasised {
			sty = lineStyle(emphasis, 1.6)
			p.Title.TextStyle.Color = emphasis
		}
		series(p, xs, ys, sty, false)
		f.addControls(p, r, "")
		setXRange(p, xs)
		plots[i/cols][i%cols] = p
	}
	noteControls(t, r, "", 2)
	// Psi of every objective goes into the CSV too, so any of them can be
	// re-plotted from it.
	// An objective added after the run was recorded has no values in it:
	// one line says so.
	for k, o := range metric.Objectives() {
		vs := make([]float64, len(r.Hist.Refreshes))
		recorded := false
		for i, rf := range r.Hist.Refreshes {
			vs[i] = nan
			if k < len(rf.Stats.Objectives) {
				vs[i] = rf.Stats.Objectives[k]
			}
			recorded = recorded || !math.IsNaN(vs[i])
		}
		if !recorded {
			t.addNote("not recorded by this run", "psi:"+string(o), "")
			continue
		}
		for i, rf := range r.Hist.Refreshes {
			t.add(vs[i], "psi:"+string(o), itoa(rf.Step))
		}
	}
	key := []keyEntry{
		{"fine-tuning (validation)", &plotter.Line{LineStyle: lineStyle(postColor, 1)}},
		{"optimized objective", &plotter.Line{LineStyle: lineStyle(emphasis, 1.6)}},
		{"pre-trained", hline{style: lineStyle(grey, 0.8, 3, 2)}},
	}
	key = append(key, f.controlKey(r, "")...)
	return &drawing{table: t, draw: func(c draw.Canvas) {
		c = f.drawKey(c, key)
		f.drawGrid(c, plots)
	}}, nil
}

// drawGrid draws a grid of plots with aligned axes.
func (f *figure) drawGrid(c draw.Canvas, plots [][]*plot.Plot) [][]draw.Canvas {
	rows, cols := len(plots), len(plots[0])
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: 6, PadY: 4, PadTop: 1, PadBottom: 1, PadLeft: 1, PadRight: 4}
	cs := plot.Align(plots, tiles, c)
	for i := range plots {
		for j, p := range plots[i] {
			if p != nil {
				p.Draw(cs[i][j])
			}
		}
	}
	return cs
}

// setXRange pins the step axis to the logged steps (a plot whose values
// were all dropped would otherwise have no range).
func setXRange(p *plot.Plot, xs []float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		if finite(x) {
			lo, hi = min(lo, x), max(hi, x)
		}
	}
	if lo > hi {
		lo, hi = 0, 1
	}
	if lo == hi {
		hi = lo + 1
	}
	p.X.Min, p.X.Max = lo, hi
	fixYRange(p)
}

// fixYRange gives an empty or flat y axis a range gonum/plot can draw.
func fixYRange(p *plot.Plot) {
	if math.IsInf(p.Y.Min, 0) || math.IsInf(p.Y.Max, 0) || p.Y.Min > p.Y.Max {
		p.Y.Min, p.Y.Max = 0, 1
	}
	if p.Y.Min == p.Y.Max {
		d := math.Max(math.Abs(p.Y.Min)*0.05, 0.05)
		p.Y.Min, p.Y.Max = p.Y.Min-d, p.Y.Max+d
	}
}

// beforeAfter are the reports the per-class figure compares: test set
// from the final summary if the run finished, else validation at the
// first and last refresh.
func beforeAfter(r *Run) (before, after metric.Report, set string) {
	if f := r.Hist.Final; f != nil && len(f.TestAfter.Recall) == r.K && len(f.TestBefore.Recall) == r.K {
		return f.TestBefore, f.TestAfter, "test"
	}
	rs := r.Hist.Refreshes
	return rs[0].Stats.Report, rs[len(rs)-1].Stats.Report, "validation"
}

// Beyond maxClassBars classes, per-class figures show the worstShown
// classes and the bestShown ones (by fine-tuned recall) and a histogram
// of all: a thousand bars cannot be read.
const (
	maxClassBars = 40
	worstShown   = 30
	bestShown    = 10
)

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
func perClassFigure(f *figure, r *Run) (*drawing, error) {
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
	key := []keyEntry{
		{"pre-trained", boxThumb{preColor}},
		{"fine-tuned", boxThumb{postColor}},
		{fmt.Sprintf("coverage target α/K = %.3g", target), hline{style: lineStyle(emphasis, 1, 4, 2)}},
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
func recallHistogram(f *figure, t *table, r *Run, before, after metric.Report, set string) *plot.Plot {
	p := f.newPlot("", fmt.Sprintf("%s recall, all %d classes", set, r.K), "classes")
	g := gridLines()
	g.Vertical.Color = nil
	p.Add(g)
	w := (f.w - vg.Inch) / histBins * 0.37
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

func naGlyph() draw.GlyphStyle {
	return draw.GlyphStyle{Color: black, Radius: 2.5, Shape: draw.CrossGlyph{}}
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
	return (f.w - vg.Inch) / vg.Length(k) * 0.37
}

// classTicks names classes on an axis: full names for a few classes,
// indices for many (names would overlap).
func classTicks(r *Run, maxNamed int) []string {
	out := make([]string, r.K)
	every := 1
	if r.K > 20 {
		every = (r.K + 9) / 10
	}
	for i := range out {
		switch {
		case r.K <= maxNamed:
			out[i] = r.ClassNames[i]
		case i%every == 0:
			out[i] = itoa(i)
		}
	}
	return out
}

func rotateX(p *plot.Plot, k int) {
	if k > 20 {
		p.X.Tick.Label.Rotation = math.Pi / 2
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
		return
	}
	if k > 4 {
		p.X.Tick.Label.Rotation = math.Pi / 6
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	}
}

// matrixGrid shows an n×n row-major matrix with row 0 at the top, as
// matrices are printed.
type matrixGrid struct {
	k int
	v []float64
}

func (g matrixGrid) Dims() (c, r int)   { return g.k, g.k }
func (g matrixGrid) X(c int) float64    { return float64(c) }
func (g matrixGrid) Y(r int) float64    { return float64(r) }
func (g matrixGrid) Z(c, r int) float64 { return g.v[(g.k-1-r)*g.k+c] }

// maxCells is the most rows (and columns) a heatmap draws: beyond, blocks
// of classes are averaged. A thousand rows would be finer than the
// printed figure's resolution and its CSV a million lines.
const maxCells = 100

// blocks splits K classes into n consecutive blocks of bs (the last may be
// smaller) with n ≤ maxCells.
func blocks(K int) (bs, n int) {
	bs = (K + maxCells - 1) / maxCells
	return bs, (K + bs - 1) / bs
}

// decimal32 shows a value that is exactly a float32 (runs keep G and P
// as float32) as the shortest decimal that float32 stands for: 0.01, not
// 0.009999999776482582, in CSVs and on colour-bar ticks. Other values,
// such as format 1's float64 matrices, are left alone.
func decimal32(v float64) float64 {
	if !finite(v) || float64(float32(v)) != v {
		return v
	}
	d, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', -1, 32), 64)
	if err != nil {
		return v
	}
	return d
}

// blockMeans averages a K×K row-major matrix over bs×bs blocks of classes.
// A block holding a value that is not finite is NaN: drawn as missing,
// never hidden in a mean.
func blockMeans(v []float64, K, bs int) []float64 {
	n := (K + bs - 1) / bs
	sum := make([]float64, n*n)
	cnt := make([]int, n*n)
	for i := range K {
		for j := range K {
			c := (i/bs)*n + j/bs
			sum[c] += v[i*K+j]
			cnt[c]++
		}
	}
	for c := range sum {
		sum[c] /= float64(cnt[c])
	}
	return sum
}

// snapshotIndices picks the refreshes the heatmaps show, among those that
// kept G and P: the first, the one nearest the middle of fine-tuning, and
// the last.
func snapshotIndices(r *Run) []int {
	var have []int
	for i := range r.Hist.Refreshes {
		if r.Hist.HasMatrices(i) {
			have = append(have, i)
		}
	}
	if len(have) <= 3 {
		return have
	}
	rs := r.Hist.Refreshes
	first, last := have[0], have[len(have)-1]
	mid := (rs[first].Step + rs[last].Step) / 2
	best := have[1]
	for _, i := range have[1 : len(have)-1] {
		if abs(rs[i].Step-mid) < abs(rs[best].Step-mid) {
			best = i
		}
	}
	return []int{first, best, last}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// blockLabel names the classes of block b in CSVs: a class, or a range.
func (r *Run) blockLabel(b, bs int) string {
	if bs == 1 {
		return r.ClassNames[b]
	}
	return fmt.Sprintf("%d-%d", b*bs, min((b+1)*bs, r.K)-1)
}

// heatFigure: the gain matrix G (or the mixup distribution P) at the
// start, middle and end of fine-tuning with one shared colour bar. Only
// the refreshes drawn are read from the run; beyond maxCells classes,
// blocks of classes are averaged.
func heatFigure(f *figure, r *Run, which string) (*drawing, error) {
	cbLabel := "gain G_ij (first-order change of ψ)"
	if which == "P" {
		cbLabel = "mixup probability P_ij"
	}
	idx := snapshotIndices(r)
	if len(idx) == 0 {
		return nil, errSkip{"no refresh kept its G and P (see record.matrices_every)"}
	}
	K := r.K
	bs, nb := blocks(K)

	t := newTable("matrix", "step", "row_class", "col_class", "value")
	mats := make([][]float64, len(idx))
	lo, hi := math.Inf(1), math.Inf(-1)
	for n, i := range idx {
		rf := &r.Hist.Refreshes[i]
		G, P, err := r.Hist.Matrices(i)
		if err != nil {
			return nil, err
		}
		src := G
		if which == "P" {
			src = P
		}
		if len(src) != K*K {
			src = make([]float64, K*K)
			for j := range src {
				src[j] = nan
			}
		}
		if bs > 1 {
			src = blockMeans(src, K, bs)
		}
		m := make([]float64, nb*nb)
		for a := range nb {
			for b := range nb {
				v := src[a*nb+b]
				if bs == 1 {
					v = decimal32(v)
				}
				t.add(v, which, itoa(rf.Step), r.blockLabel(a, bs), r.blockLabel(b, bs))
				if !finite(v) {
					v = nan // drawn in the NaN colour, never as a palette colour
				} else {
					lo, hi = min(lo, v), max(hi, v)
				}
				m[a*nb+b] = v
			}
		}
		mats[n] = m
	}
	var cmap palette.ColorMap
	if which == "G" {
		// Diverging around 0: red gains help the objective, blue ones hurt it.
		m := math.Max(math.Abs(lo), math.Abs(hi))
		if !(m > 0) || math.IsInf(m, 0) {
			m = 1
		}
		d := moreland.SmoothBlueRed()
		d.SetMin(-m)
		d.SetMax(m)
		cmap = d
	} else {
		m := hi
		if !(m > 0) || math.IsInf(m, 0) {
			m = 1
		}
		cmap = sequential(m)
	}
	pal := cmap.Palette(255)
	plots := make([]*plot.Plot, len(idx))
	ticks := classTicks(r, 12)
	for n, i := range idx {
		rf := r.Hist.Refreshes[i]
		title := fmt.Sprintf("step %d", rf.Step)
		switch {
		case i == 0:
			title += " (pre-trained)"
		case i == len(r.Hist.Refreshes)-1:
			title += " (end)"
		}
		p := f.newPlot(which+" at "+title, "mixed-in class j", "")
		h := plotter.NewHeatMap(matrixGrid{nb, mats[n]}, pal)
		h.Min, h.Max = cmap.Min(), cmap.Max()
		h.NaN = color.White
		p.Add(h)
		var bad plotter.XYs
		for a := range nb {
			for b := range nb {
				if math.IsNaN(mats[n][a*nb+b]) {
					bad = append(bad, plotter.XY{X: float64(b), Y: float64(nb - 1 - a)})
				}
			}
		}
		if len(bad) > 0 {
			sc, _ := plotter.NewScatter(bad)
			sc.GlyphStyle = naGlyph()
			p.Add(sc)
		}
		// Cell c holds classes c·bs …; labels name the first. Up to 20
		// cells every one is marked; beyond, a labelled mark every
		// tenth (every quarter when blocks are averaged: three panels
		// share the width).
		every := 1
		switch {
		case bs > 1:
			every = (nb + 3) / 4
		case nb > 20:
			every = (nb + 9) / 10
		}
		var xt, yt []plot.Tick
		for c := range nb {
			if c%every != 0 {
				continue
			}
			xt = append(xt, plot.Tick{Value: float64(c), Label: itoa(c * bs)})
			yl := ""
			if n == 0 {
				yl = itoa(c * bs)
				if bs == 1 && K <= 12 {
					yl = ticks[c]
					if r.Named {
						yl = fmt.Sprintf("%s %d", ticks[c], c)
					}
				}
			}
			yt = append(yt, plot.Tick{Value: float64(nb - 1 - c), Label: f.t(yl)})
		}
		p.X.Tick.Marker = plot.ConstantTicks(xt)
		p.Y.Tick.Marker = plot.ConstantTicks(yt)
		if n == 0 {
			p.Y.Label.Text = f.t("label class i")
		}
		p.X.Padding, p.Y.Padding = 0, 0
		p.X.Min, p.X.Max = -0.5, float64(nb)-0.5
		p.Y.Min, p.Y.Max = -0.5, float64(nb)-0.5
		plots[n] = p
	}
	cb := f.newPlot("", "", cbLabel)
	cb.Add(colorBar{cmap: cmap, bands: 96})
	cb.HideX()
	cb.Y.Padding = 0
	cb.Y.Label.Position = draw.PosCenter
	var key []keyEntry
	if bs > 1 {
		key = append(key, keyEntry{f.t(fmt.Sprintf("each cell: the mean over a block of %d×%d of the %d classes", bs, bs, K)), boxThumb{grey}})
	}
	if t.dropped > 0 {
		key = append(key, keyEntry{"not finite (white, see CSV)", glyphThumb{naGlyph()}})
	}
	return &drawing{table: t, draw: func(c draw.Canvas) {
		c = f.drawKey(c, key)
		// The colour bar takes a narrow strip at the right, spanning the
		// heatmaps' data area exactly.
		cbW := 0.85 * vg.Inch
		left := c
		left.Max.X -= cbW
		cs := f.drawGrid(left, [][]*plot.Plot{plots})
		data := plots[0].DataCanvas(cs[0][0])
		right := c
		right.Min.X = c.Max.X - cbW + 10
		right.Max.X -= 2
		right.Min.Y, right.Max.Y = data.Min.Y, data.Max.Y
		cb.Draw(right)
	}}, nil
}

// sequential maps [0, hi] from white to dark blue (P is a probability,
// so it needs no diverging map).
func sequential(hi float64) palette.ColorMap {
	m, err := moreland.NewLuminance([]color.Color{
		color.NRGBA{8, 48, 107, 255}, color.NRGBA{66, 146, 198, 255}, color.NRGBA{255, 255, 255, 255},
	})
	if err != nil {
		panic(err) // fixed control colours of increasing luminance
	}
	m = palette.Reverse(m)
	m.SetMin(0)
	m.SetMax(hi)
	return m
}

// lambdaFigure: the Lagrange multipliers over steps, one line per class
// (or head and tail); with many classes, the lines of the worstShown
// classes whose multipliers grew largest (the CSV has every class).
func lambdaFigure(f *figure, r *Run) (*drawing, error) {
	xs := steps(r)
	n := 0
	for _, rf := range r.Hist.Refreshes {
		n = max(n, len(rf.Stats.Lambda))
	}
	if n == 0 {
		return nil, errSkip{fmt.Sprintf("objective %s uses no Lagrange multipliers", optimizedNames(r))}
	}
	names := make([]string, n)
	for i := range names {
		switch {
		case n == r.K:
			names[i] = r.ClassNames[i]
		case n == 2:
			names[i] = []string{"head", "tail"}[i]
		default:
			names[i] = fmt.Sprintf("λ_%d", i)
		}
	}
	ys := make([][]float64, n)
	peak := make([]float64, n)
	t := newTable("multiplier", "step", "value")
	for i := range n {
		ys[i] = make([]float64, len(xs))
		peak[i] = math.Inf(-1)
		for k, rf := range r.Hist.Refreshes {
			ys[i][k] = nan
			if len(rf.Stats.Lambda) == n {
				ys[i][k] = rf.Stats.Lambda[i]
				t.add(ys[i][k], names[i], itoa(rf.Step))
				if finite(ys[i][k]) {
					peak[i] = max(peak[i], ys[i][k])
				}
			} else {
				t.addNote(fmt.Sprintf("objective %s has %d multipliers here", rf.Hyper.Objective, len(rf.Stats.Lambda)), names[i], itoa(rf.Step))
			}
		}
	}
	drawn := make([]int, n)
	for i := range drawn {
		drawn[i] = i
	}
	title := "Lagrange multipliers of " + optimizedNames(r)
	if n > maxClassBars {
		sort.SliceStable(drawn, func(a, b int) bool { return peak[drawn[a]] > peak[drawn[b]] })
		drawn = drawn[:worstShown]
		sort.Ints(drawn)
		title += fmt.Sprintf(" (the %d of %d largest)", worstShown, n)
	}
	p := f.newPlot(title, "step (SGD iterations)", "multiplier λ")
	p.Add(gridLines())
	var key []keyEntry
	for _, i := range drawn {
		th := series(p, xs, ys[i], lineStyle(seriesColor(i), 1), false)
		if len(drawn) <= 12 {
			key = append(key, keyEntry{names[i], th})
		}
	}
	f.addControls(p, r, "")
	noteControls(t, r, "", 2)
	setXRange(p, xs)
	p.Y.Max += 0.04 * (p.Y.Max - p.Y.Min) // lines at λ = 1 stay off the frame
	key = append(key, f.controlKey(r, "")...)
	return &drawing{table: t, draw: func(c draw.Canvas) {
		c, p := f.drawTitle(c, p)
		c = f.drawKey(c, key)
		p.Draw(c)
	}}, nil
}

// sFigure: the inverse temperature s over steps, as a step function with
// its changes marked.
func sFigure(f *figure, r *Run) (*drawing, error) {
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
	return &drawing{table: t, draw: func(c draw.Canvas) {
		c, p := f.drawTitle(c, p)
		c = f.drawKey(c, key)
		p.Draw(c)
	}}, nil
}

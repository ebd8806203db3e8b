package viz

import (
	"fmt"
	"image/color"
	"math"

	"selmix/core/loop"
	"selmix/runs/record"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg/draw"
)

// The ratio panel's axis stops here: one interval whose prediction was
// near 0 must not flatten every other one. Values beyond are drawn at the
// edge as triangles (vermillion for the wrong sign); the CSV has them
// exact.
const ratioLimit = 5.0

var (
	wrongColor = color.NRGBA{213, 94, 0, 255}  // Okabe–Ito vermillion
	predColor  = color.NRGBA{0, 158, 115, 255} // Okabe–Ito bluish green
)

// linearFigure: per refresh interval, the change of ψ that the previous
// refresh's G and P predicted for the steps taken and the change that
// happened (docs/method.md), over the step that closed the interval; below,
// realised/predicted, with the intervals of the wrong sign marked. A run
// that records no prediction gets no figure.
func linearFigure(f *figure, r *RunData) (*drawing, error) {
	d := linearPoints(r)
	if d.have == 0 {
		return nil, errSkip{"no refresh of this run records a predicted change of ψ (a policy without mixup steps, or recorded before refreshes kept it)"}
	}
	t := d.t
	for _, a := range controlsShown(r) {
		t.addNote(a.Control.String(), "control", "", itoa(a.Step))
	}
	predStyle := lineStyle(predColor, 1.2, 4, 2)
	realStyle := lineStyle(postColor, 1.4)
	top := linearDeltaPanel(f, r, d, predStyle, realStyle)
	bot := linearRatioPanel(f, r, d)

	title := fmt.Sprintf("change of ψ %s per refresh interval: predicted by G·P (first order) and realised; wrong sign in %d of %d",
		optimizedNames(r), d.wrong, d.have)
	key := []keyEntry{
		{"predicted", &plotter.Line{LineStyle: predStyle}},
		{"realised", &plotter.Line{LineStyle: realStyle}},
		{"ratio 1: the prediction held", hline{style: lineStyle(grey, 0.8, 3, 2)}},
		{"wrong sign", glyphThumb{wrongGlyph()}},
	}
	if len(d.clipped)+len(d.clippedBad) > 0 {
		key = append(key, keyEntry{fmt.Sprintf("|ratio| > %g, drawn at the edge (see CSV)", ratioLimit), glyphThumb{clipGlyph(black)}})
	}
	key = append(key, f.controlKey(r, "")...)
	grid := [][]*plot.Plot{{top}, {bot}}
	return &drawing{table: t, draw: func(c draw.Canvas) {
		sty := top.Title.TextStyle
		sty.Font.Size = titleSize
		c = fillTitle(c, sty, f.t(title), 4)
		c = f.drawKey(c, key)
		f.drawGrid(c, grid)
	}}, nil
}

// linearData is what the linear-step figure draws: per refresh (at xs)
// the predicted and realised change of ψ (NaN where none), the ratio
// points by kind (right sign, wrong sign, either beyond ratioLimit), the
// realised changes of the wrong sign, and how many intervals have a
// prediction and how many of those the wrong sign.
type linearData struct {
	t                                     *table
	xs, pred, real                        []float64
	ok, bad, clipped, clippedBad, badReal plotter.XYs
	have, wrong                           int
}

// linearPoints reads the intervals of r into the figure's data and CSV.
func linearPoints(r *RunData) *linearData {
	rs := r.Hist.Refreshes
	n := len(rs)
	d := &linearData{t: newTable("series", "from_step", "step", "value"),
		xs: make([]float64, n), pred: make([]float64, n), real: make([]float64, n)}
	t := d.t
	predicted, realised := catalogued(record.KeyPredicted), catalogued(record.KeyRealised)
	for i := range rs {
		rf := &rs[i]
		d.xs[i] = float64(rf.Step)
		d.pred[i], d.real[i] = nan, nan
		from := ""
		if i > 0 {
			from = itoa(rs[i-1].Step)
		}
		p, ok := predicted.Get(rf)
		q, _ := realised.Get(rf)
		if !ok {
			t.addNote("no prediction", "interval", from, itoa(rf.Step))
			continue
		}
		d.have++
		d.pred[i], d.real[i] = p, q
		t.add(p, predicted.Figure, from, itoa(rf.Step))
		t.add(q, realised.Figure, from, itoa(rf.Step))
		if p == 0 {
			t.addNote("no ratio: the prediction is 0", "ratio", from, itoa(rf.Step))
			continue
		}
		ratio := q / p
		note := ""
		if loop.WrongSign(p, q) {
			d.wrong++
			note = "wrong sign"
			if finite(q) {
				d.badReal = append(d.badReal, plotter.XY{X: d.xs[i], Y: q})
			}
		}
		if finite(ratio) && math.Abs(ratio) > ratioLimit {
			if note != "" {
				note += "; "
			}
			note += fmt.Sprintf("drawn at ±%g", ratioLimit)
		}
		t.addNoted(ratio, note, "ratio", from, itoa(rf.Step))
		if !finite(ratio) {
			continue
		}
		pt := plotter.XY{X: d.xs[i], Y: math.Max(-ratioLimit, math.Min(ratioLimit, ratio))}
		switch {
		case math.Abs(ratio) > ratioLimit && loop.WrongSign(p, q):
			d.clippedBad = append(d.clippedBad, pt)
		case math.Abs(ratio) > ratioLimit:
			d.clipped = append(d.clipped, pt)
		case loop.WrongSign(p, q):
			d.bad = append(d.bad, pt)
		default:
			d.ok = append(d.ok, pt)
		}
	}
	return d
}

// linearDeltaPanel is the upper panel: predicted and realised Δψ per
// interval, the wrong-sign realised changes marked.
func linearDeltaPanel(f *figure, r *RunData, d *linearData, predStyle, realStyle draw.LineStyle) *plot.Plot {
	top := f.newPlot("", "", "Δψ over the interval")
	top.Add(gridLines())
	top.Add(hline{0, lineStyle(black, 0.6)})
	series(top, d.xs, d.pred, predStyle, false)
	series(top, d.xs, d.real, realStyle, false)
	top.Add(dots(d.pred, d.xs, predColor, draw.CircleGlyph{}), dots(d.real, d.xs, postColor, draw.CircleGlyph{}))
	addScatter(top, d.badReal, wrongGlyph())
	f.addControls(top, r, "")
	setXRange(top, d.xs)
	top.X.Tick.Label.Font.Size = 0.01 // the panel below names the steps
	top.X.Tick.Label.Color = nil
	return top
}

// linearRatioPanel is the lower panel: realised/predicted as stems from
// 0, the wrong sign in vermillion, values beyond ±ratioLimit at the edge.
func linearRatioPanel(f *figure, r *RunData, d *linearData) *plot.Plot {
	bot := f.newPlot("", "step (SGD iterations) at the refresh closing the interval", "realised / predicted")
	bot.Add(gridLines())
	bot.Add(hline{0, lineStyle(black, 0.6)}, hline{1, lineStyle(grey, 0.8, 3, 2)})
	// Stems from 0, so a small ratio still reads as a value, not a gap.
	for _, pts := range []struct {
		xy plotter.XYs
		c  color.Color
	}{{d.ok, postColor}, {d.bad, wrongColor}, {d.clipped, postColor}, {d.clippedBad, wrongColor}} {
		for _, p := range pts.xy {
			bot.Add(stem{p, lineStyle(pts.c, 1)})
		}
	}
	addScatter(bot, d.ok, draw.GlyphStyle{Color: postColor, Radius: 2.2, Shape: draw.CircleGlyph{}})
	addScatter(bot, d.bad, wrongGlyph())
	addScatter(bot, d.clipped, clipGlyph(postColor))
	addScatter(bot, d.clippedBad, clipGlyph(wrongColor))
	f.addControls(bot, r, "")
	setXRange(bot, d.xs)
	bot.Y.Min, bot.Y.Max = math.Min(bot.Y.Min, -0.25), math.Max(bot.Y.Max, 1.25)
	bot.Y.Tick.Marker = niceTicks{want: 4, refs: []float64{0, 1}} // 0 and the reference 1 always named
	return bot
}

func clipGlyph(c color.Color) draw.GlyphStyle {
	return draw.GlyphStyle{Color: c, Radius: 2.6, Shape: draw.TriangleGlyph{}}
}

func wrongGlyph() draw.GlyphStyle {
	return draw.GlyphStyle{Color: wrongColor, Radius: 2.8, Shape: draw.CrossGlyph{}}
}

// dots marks each finite value of ys at xs: an interval between two
// without a prediction is a lone point, and a line alone would hide it.
func dots(ys, xs []float64, c color.Color, shape draw.GlyphDrawer) plot.Plotter {
	var pts plotter.XYs
	for i, y := range ys {
		if finite(y) && finite(xs[i]) {
			pts = append(pts, plotter.XY{X: xs[i], Y: y})
		}
	}
	s, err := plotter.NewScatter(pts)
	if err != nil {
		return nothing{}
	}
	s.GlyphStyle = draw.GlyphStyle{Color: c, Radius: 1.6, Shape: shape}
	return s
}

func addScatter(p *plot.Plot, pts plotter.XYs, g draw.GlyphStyle) {
	if len(pts) == 0 {
		return
	}
	s, err := plotter.NewScatter(pts)
	if err != nil {
		return // pts are finite
	}
	s.GlyphStyle = g
	p.Add(s)
}

// stem is a vertical line from 0 to a point.
type stem struct {
	p     plotter.XY
	style draw.LineStyle
}

func (s stem) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	x := tx(s.p.X)
	c.StrokeLine2(s.style, x, ty(0), x, ty(s.p.Y))
}

func (s stem) DataRange() (xmin, xmax, ymin, ymax float64) {
	return s.p.X, s.p.X, math.Min(0, s.p.Y), math.Max(0, s.p.Y)
}

// nothing is a plotter that draws nothing (a series with no finite value).
type nothing struct{}

func (nothing) Plot(draw.Canvas, *plot.Plot) {}

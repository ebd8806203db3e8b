package viz

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// vline marks a step across the whole height of a plot: how control
// changes are shown. It reports no data range, so marks never stretch the
// axes.
type vline struct {
	x     float64
	style draw.LineStyle
}

func (v vline) Plot(c draw.Canvas, p *plot.Plot) {
	tx, _ := p.Transforms(&c)
	x := tx(v.x)
	if x < c.Min.X-0.01 || x > c.Max.X+0.01 {
		return
	}
	c.StrokeLine2(v.style, x, c.Min.Y, x, c.Max.Y)
}

func (v vline) Thumbnail(c *draw.Canvas) {
	x := (c.Min.X + c.Max.X) / 2
	c.StrokeLine2(v.style, x, c.Min.Y, x, c.Max.Y)
}

// hline is a horizontal reference line across the whole width (the α/K
// coverage target, a pre-trained baseline). Its y is in the data range.
type hline struct {
	y     float64
	style draw.LineStyle
}

func (h hline) Plot(c draw.Canvas, p *plot.Plot) {
	_, ty := p.Transforms(&c)
	y := ty(h.y)
	c.StrokeLine2(h.style, c.Min.X, y, c.Max.X, y)
}

func (h hline) DataRange() (xmin, xmax, ymin, ymax float64) {
	return inf, -inf, h.y, h.y
}

func (h hline) Thumbnail(c *draw.Canvas) {
	y := (c.Min.Y + c.Max.Y) / 2
	c.StrokeLine2(h.style, c.Min.X, y, c.Max.X, y)
}

var inf = math.Inf(1)

func lineStyle(c color.Color, width vg.Length, dashes ...vg.Length) draw.LineStyle {
	return draw.LineStyle{Color: c, Width: width, Dashes: dashes}
}

// series adds ys over xs to p as a line, leaving gaps where a value is not
// finite (gonum/plot refuses NaN and ±Inf). It returns a thumbnail for the
// key, or nil if nothing was finite.
func series(p *plot.Plot, xs, ys []float64, sty draw.LineStyle, step bool) plot.Thumbnailer {
	var thumb plot.Thumbnailer
	var seg plotter.XYs
	flush := func() {
		if len(seg) == 0 {
			return
		}
		if len(seg) == 1 {
			// A lone point between gaps would be invisible as a line.
			s, _ := plotter.NewScatter(seg)
			s.GlyphStyle = draw.GlyphStyle{Color: sty.Color, Radius: sty.Width + 0.5, Shape: draw.CircleGlyph{}}
			p.Add(s)
		} else {
			l, _ := plotter.NewLine(seg)
			l.LineStyle = sty
			if step {
				l.StepStyle = plotter.PostStep
			}
			p.Add(l)
			if thumb == nil {
				thumb = l
			}
		}
		seg = nil
	}
	for i, y := range ys {
		if !finite(xs[i]) || !finite(y) {
			flush()
			continue
		}
		seg = append(seg, plotter.XY{X: xs[i], Y: y})
	}
	flush()
	if thumb == nil {
		l := &plotter.Line{LineStyle: sty}
		thumb = l
	}
	return thumb
}

// boxThumb is a filled swatch for bar series in a key.
type boxThumb struct{ c color.Color }

func (b boxThumb) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X + 2, Y: c.Min.Y}, {X: c.Min.X + 2, Y: c.Max.Y}, {X: c.Max.X - 2, Y: c.Max.Y}, {X: c.Max.X - 2, Y: c.Min.Y}}
	c.FillPolygon(b.c, c.ClipPolygonY(pts))
}

// glyphThumb shows a marker in a key.
type glyphThumb struct{ g draw.GlyphStyle }

func (g glyphThumb) Thumbnail(c *draw.Canvas) {
	c.DrawGlyph(g.g, c.Center())
}

// addBars adds vals as a bar series of width w at offset, in colour c,
// with a mark in glyph g where a value is not finite (a bar cannot show it).
func addBars(p *plot.Plot, vals []float64, w, offset vg.Length, c color.Color, g draw.GlyphStyle) {
	clean := make(plotter.Values, len(vals))
	var bad []float64
	for x, v := range vals {
		if finite(v) {
			clean[x] = v
		} else {
			bad = append(bad, float64(x))
		}
	}
	b, err := plotter.NewBarChart(clean, w)
	if err != nil {
		panic(err) // clean holds finite values only
	}
	b.Color = c
	b.LineStyle.Width = 0
	b.Offset = offset
	p.Add(b)
	if len(bad) > 0 {
		p.Add(naMarks{bad, offset, g})
	}
}

// naMarks marks bars whose value is not finite: a cross just above the x
// axis where the bar would stand (offset as the bar is), so a missing bar
// never reads as a zero.
type naMarks struct {
	xs     []float64
	offset vg.Length
	glyph  draw.GlyphStyle
}

func (m naMarks) Plot(c draw.Canvas, p *plot.Plot) {
	tx, _ := p.Transforms(&c)
	for _, x := range m.xs {
		c.DrawGlyph(m.glyph, vg.Point{X: tx(x) + m.offset, Y: c.Min.Y + m.glyph.Radius + 2})
	}
}

// colorBar draws a vertical colour bar as filled rectangles. gonum/plot's
// own ColorBar draws an image, which the TeX backend writes as a PNG file
// into the working directory: vector bands keep every format self-contained.
type colorBar struct {
	cmap  palette.ColorMap
	bands int
}

func (b colorBar) Plot(c draw.Canvas, p *plot.Plot) {
	_, ty := p.Transforms(&c)
	lo, hi := b.cmap.Min(), b.cmap.Max()
	step := (hi - lo) / float64(b.bands)
	for i := range b.bands {
		v0 := lo + float64(i)*step
		col, err := b.cmap.At(v0 + step/2)
		if err != nil {
			continue
		}
		// Each band reaches to the top and the next one covers it, so no
		// anti-aliased seam shows between bands.
		y0, y1 := ty(v0), ty(hi)
		pts := []vg.Point{{X: c.Min.X, Y: y0}, {X: c.Min.X, Y: y1}, {X: c.Max.X, Y: y1}, {X: c.Max.X, Y: y0}}
		c.FillPolygon(col, c.ClipPolygonY(pts))
	}
}

func (b colorBar) DataRange() (xmin, xmax, ymin, ymax float64) {
	return 0, 1, b.cmap.Min(), b.cmap.Max()
}

func naGlyph() draw.GlyphStyle {
	return draw.GlyphStyle{Color: black, Radius: 2.5, Shape: draw.CrossGlyph{}}
}

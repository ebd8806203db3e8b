package viz

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
	"gonum.org/v1/plot/vg/vgtex"

	"selmix/viz/internal/pdfcanvas"
)

var nan = math.NaN()

// Formats are the output formats Export writes.
var Formats = []string{"png", "svg", "pdf", "tex"}

// Options say how figures are written. Zero values are the defaults.
type Options struct {
	Format string // png (default) | svg | pdf | tex (PGF/TikZ picture to \input)
	DPI    int    // png only; 0 = 300
	// Width and Height override every figure's size; 0 = each figure's
	// default (full text width 7 in or one column 3.5 in).
	Width, Height vg.Length
}

func (o Options) withDefaults() (Options, error) {
	if o.Format == "" {
		o.Format = "png"
	}
	ok := false
	for _, f := range Formats {
		ok = ok || f == o.Format
	}
	if !ok {
		return o, fmt.Errorf("unknown format %q (want %s)", o.Format, strings.Join(Formats, ", "))
	}
	if o.DPI == 0 {
		o.DPI = 300
	}
	if o.DPI < 10 || o.DPI > 2400 {
		return o, fmt.Errorf("dpi %d out of range [10, 2400]", o.DPI)
	}
	if (o.Width == 0) != (o.Height == 0) || o.Width < 0 || o.Height < 0 {
		return o, fmt.Errorf("size %vx%v: give both width and height, positive", o.Width, o.Height)
	}
	return o, nil
}

// ParseSize reads "WxH" with an optional unit after H: in (default), cm,
// mm, pt, or px (converted at dpi).
func ParseSize(s string, dpi int) (w, h vg.Length, err error) {
	unit := vg.Inch
	num := s
	for _, u := range []struct {
		suffix string
		l      vg.Length
	}{{"in", vg.Inch}, {"cm", vg.Centimeter}, {"mm", vg.Millimeter}, {"pt", vg.Points(1)}, {"px", vg.Inch / vg.Length(max(dpi, 1))}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			num, unit = n, u.l
			break
		}
	}
	ws, hs, ok := strings.Cut(num, "x")
	fw, err1 := strconv.ParseFloat(strings.TrimSpace(ws), 64)
	fh, err2 := strconv.ParseFloat(strings.TrimSpace(hs), 64)
	if !ok || err1 != nil || err2 != nil || !(fw > 0) || !(fh > 0) || math.IsInf(fw, 0) || math.IsInf(fh, 0) {
		return 0, 0, fmt.Errorf("size %q: want WxH with an optional unit in|cm|mm|pt|px, e.g. 7x3in", s)
	}
	w, h = vg.Length(fw)*unit, vg.Length(fh)*unit
	if w < vg.Inch || h < vg.Inch/2 || w > 100*vg.Inch || h > 100*vg.Inch {
		return 0, 0, fmt.Errorf("size %q: want between 1x0.5 in and 100x100 in", s)
	}
	return w, h, nil
}

// Default figure sizes: a full text width and one column of a two-column
// paper.
const (
	fullWidth = 7 * vg.Inch
	colWidth  = 3.5 * vg.Inch
)

// Font sizes chosen to stay readable when the figure is printed at its
// default size (a paper's 8–9 pt caption size).
const (
	titleSize  = 9
	labelSize  = 8
	tickSize   = 7
	legendSize = 7.5
)

// Okabe–Ito colours: distinguishable with the common colour-vision
// deficiencies and in greyscale print order.
var okabeIto = []color.Color{
	color.NRGBA{0, 114, 178, 255},   // blue
	color.NRGBA{213, 94, 0, 255},    // vermillion
	color.NRGBA{0, 158, 115, 255},   // bluish green
	color.NRGBA{204, 121, 167, 255}, // reddish purple
	color.NRGBA{230, 159, 0, 255},   // orange
	color.NRGBA{86, 180, 233, 255},  // sky blue
	color.NRGBA{0, 0, 0, 255},       // black
	color.NRGBA{175, 155, 0, 255},   // Okabe–Ito yellow darkened: the original vanishes on white
}

// seriesColor is the colour of series i, the same in every figure (class i,
// run i).
func seriesColor(i int) color.Color {
	c := okabeIto[i%len(okabeIto)]
	if i >= len(okabeIto) {
		// Beyond the palette, darken so repeated hues still differ.
		n := c.(color.NRGBA)
		f := 1 - 0.35*float64((i/len(okabeIto))%2)
		return color.NRGBA{uint8(float64(n.R) * f), uint8(float64(n.G) * f), uint8(float64(n.B) * f), 255}
	}
	return c
}

var (
	black     = color.NRGBA{0, 0, 0, 255}
	grey      = color.NRGBA{150, 150, 150, 255}
	emphasis  = color.NRGBA{213, 94, 0, 255} // the optimized objective
	preColor  = color.NRGBA{170, 170, 170, 255}
	postColor = color.NRGBA{0, 114, 178, 255}
	ctlColor  = color.NRGBA{120, 120, 120, 255}
)

// figure is one output file being drawn: its format decides how text is
// escaped.
type figure struct {
	opts Options
	w, h vg.Length // on paper
	// k scales the layout onto the paper: the figure is laid out at
	// w/k × h/k and drawn at k, text, ticks and lines with it (0 or 1:
	// as laid out).
	k float64
}

// dw and dh are the size the figure is laid out at.
func (f *figure) dw() vg.Length {
	if f.k <= 0 {
		return f.w
	}
	return f.w / vg.Length(f.k)
}

func (f *figure) dh() vg.Length {
	if f.k <= 0 {
		return f.h
	}
	return f.h / vg.Length(f.k)
}

func newFigure(o Options, w, h vg.Length) *figure {
	f := &figure{opts: o, w: w, h: h, k: 1}
	if o.Width > 0 {
		f.w, f.h = o.Width, o.Height
		f.k = fitScale(w, h, o.Width, o.Height)
	}
	return f
}

// Sizes smaller than a figure's own are drawn by laying the figure out
// larger and scaling it down, text and all: a layout keeps at least
// minLayoutW of width (its own, if less) and minLayoutH of its own
// height, and the scale never goes below minScale (text under about
// 5 pt), a size that would need less being refused (CheckSize).
const (
	minLayoutW = 5 * vg.Inch
	minLayoutH = 0.75
	minScale   = 0.5
)

// fitScale is the scale at which a figure of its own size w×h is drawn
// at W×H.
func fitScale(w, h, W, H vg.Length) float64 {
	return math.Min(1, math.Min(float64(W/min(w, minLayoutW)), float64(H/(minLayoutH*h))))
}

// CheckSize refuses a size (o.Width × o.Height) too small for a run's
// figures to lay out, naming the figure and the smallest size of the
// same shape that works.
func CheckSize(o Options) error {
	if o.Width <= 0 {
		return nil
	}
	for _, s := range runFigures {
		if k := fitScale(s.w, s.h, o.Width, o.Height); k < minScale {
			up := vg.Length(minScale / k)
			return fmt.Errorf("--size %s: too small for the %s figure (its text would be under 5 pt); the smallest of this shape that works is %s",
				sizeText(o.Width, o.Height), s.name, sizeText(o.Width*up, o.Height*up))
		}
	}
	return nil
}

// sizeText is w×h in inches, rounded up to 0.01 in.
func sizeText(w, h vg.Length) string {
	return fmt.Sprintf("%gx%gin", math.Ceil(float64(w/vg.Inch)*100)/100, math.Ceil(float64(h/vg.Inch)*100)/100)
}

// t prepares label text for the output format: TeX output is read by
// LaTeX, where Greek letters need math mode and _ % & # are special.
func (f *figure) t(s string) string {
	if f.opts.Format != "tex" {
		return s
	}
	r := strings.NewReplacer(`\`, `\textbackslash{}`, "_", `\_`, "%", `\%`, "&", `\&`, "#", `\#`, "$", `\$`,
		"{", `\{`, "}", `\}`, "^", `\^{}`, "~", `\~{}`,
		"ψ", `$\psi$`, "λ", `$\lambda$`, "α", `$\alpha$`, "≥", `$\geq$`, "×", `$\times$`, "·", `$\cdot$`, "→", `$\to$`, "−", `-`)
	return r.Replace(s)
}

// newPlot is a plot in the house style.
func (f *figure) newPlot(title, xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = f.t(title)
	p.Title.TextStyle.Font.Size = titleSize
	p.Title.Padding = 3
	p.X.Label.Text = f.t(xlabel)
	p.Y.Label.Text = f.t(ylabel)
	p.X.Tick.Marker = niceTicks{want: 5}
	p.Y.Tick.Marker = niceTicks{want: 4}
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = labelSize
		a.Tick.Label.Font.Size = tickSize
		a.Label.Padding = 2
		a.Padding = 2
	}
	p.Legend.TextStyle.Font.Size = legendSize
	return p
}

func gridLines() *plotter.Grid {
	g := plotter.NewGrid()
	g.Vertical.Color = color.NRGBA{230, 230, 230, 255}
	g.Horizontal.Color = color.NRGBA{230, 230, 230, 255}
	g.Vertical.Width, g.Horizontal.Width = 0.4, 0.4
	return g
}

// keyEntry is one item of a figure's key.
type keyEntry struct {
	label string
	thumb plot.Thumbnailer
}

// drawKey lays the key out in rows across the top of c, outside every
// plot so it can never cover data, and returns the canvas left below it.
func (f *figure) drawKey(c draw.Canvas, entries []keyEntry) draw.Canvas {
	if len(entries) == 0 {
		return c
	}
	sty := plot.New().Legend.TextStyle
	sty.Font.Size = legendSize
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YCenter
	thumbW := vg.Length(14)
	gap := vg.Length(4)
	sep := vg.Length(10)
	rowH := sty.FontExtents().Height + 2
	avail := c.Max.X - c.Min.X
	// Pack entries greedily into rows.
	var rows [][]int
	var widths [][]vg.Length
	x := avail + 1
	for i, e := range entries {
		w := thumbW + gap + sty.Width(f.t(e.label))
		if x+w > avail && x > 0 || len(rows) == 0 {
			rows = append(rows, nil)
			widths = append(widths, nil)
			x = 0
		}
		r := len(rows) - 1
		rows[r] = append(rows[r], i)
		widths[r] = append(widths[r], w)
		x += w + sep
	}
	y := c.Max.Y - rowH/2 - 1
	for r, row := range rows {
		total := vg.Length(0)
		for _, w := range widths[r] {
			total += w
		}
		total += sep * vg.Length(len(row)-1)
		x := c.Min.X + (avail-total)/2
		for k, i := range row {
			e := entries[i]
			tc := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
				Min: vg.Point{X: x, Y: y - rowH/2 + 1}, Max: vg.Point{X: x + thumbW, Y: y + rowH/2 - 1}}}
			e.thumb.Thumbnail(&tc)
			c.FillText(sty, vg.Point{X: x + thumbW + gap, Y: y}, f.t(e.label))
			x += widths[r][k] + sep
		}
		y -= rowH
	}
	out := c
	out.Max.Y = c.Max.Y - rowH*vg.Length(len(rows)) - 3
	return out
}

// drawTitle draws p's title across the top of c and returns the rest of c
// and a copy of p without its title, so a key can go between the two.
func (f *figure) drawTitle(c draw.Canvas, p *plot.Plot) (draw.Canvas, *plot.Plot) {
	if p.Title.Text == "" {
		return c, p
	}
	c = fillTitle(c, p.Title.TextStyle, p.Title.Text, p.Title.Padding+1)
	q := *p
	q.Title.Text = ""
	return c, &q
}

// fillTitle draws text centred across the top of c in sty, broken at
// spaces into as many lines as it takes to stay inside c's width (a
// figure drawn at 3.5 in lost both ends of a one-line title), and returns
// c less the lines and pad below them.
func fillTitle(c draw.Canvas, sty text.Style, title string, pad vg.Length) draw.Canvas {
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
	width := c.Max.X - c.Min.X
	var lines []string
	for _, w := range strings.Fields(title) {
		if n := len(lines); n > 0 && sty.Width(lines[n-1]+" "+w) <= width {
			lines[n-1] += " " + w
			continue
		}
		lines = append(lines, w)
	}
	for _, l := range lines {
		c.FillText(sty, vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: c.Max.Y - 1}, l)
		c.Max.Y -= sty.Rectangle(l).Size().Y
	}
	c.Max.Y -= pad
	return c
}

// render draws into a canvas of the figure's size and returns the encoded
// file.
func (f *figure) render(draws func(c draw.Canvas)) ([]byte, error) {
	var cw vg.CanvasWriterTo
	switch f.opts.Format {
	case "png":
		cw = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(f.w, f.h), vgimg.UseDPI(f.opts.DPI))}
	case "svg":
		// Fonts are named, not embedded: an embedded Liberation Serif is
		// ~520 KB of base64 in every file. See svgFonts for the fallback.
		cw = vgsvg.NewWith(vgsvg.UseWH(f.w, f.h))
	case "pdf":
		// Fonts embedded as UTF-8 subsets: gonum's vgpdf writes cp1252,
		// which garbles ψ, α and ·.
		cw = pdfcanvas.New(f.w, f.h)
	case "tex":
		cw = vgtex.New(f.w, f.h)
	default:
		return nil, fmt.Errorf("unknown format %q", f.opts.Format)
	}
	dc := draw.New(cw)
	// The image canvases start transparent; papers want white.
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	if f.k > 0 && f.k != 1 {
		cw.Scale(f.k, f.k)
		dc = draw.Canvas{Canvas: cw, Rectangle: vg.Rectangle{Max: vg.Point{X: f.dw(), Y: f.dh()}}}
	}
	if err := drawSafely(func() { draws(dc) }); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := cw.WriteTo(&buf); err != nil {
		return nil, err
	}
	if f.opts.Format == "svg" {
		return bytes.ReplaceAll(buf.Bytes(), svgFont, svgFamilies), nil
	}
	return buf.Bytes(), nil
}

// svgFont is the font family gonum/plot names in an SVG (its text is
// measured in Liberation Serif), and svgFamilies is what replaces it:
// Liberation Serif where installed, else Times New Roman, whose glyphs
// have the same widths (Liberation Serif was drawn metric-compatible with
// it), so labels keep their layout on a machine without Liberation.
var (
	svgFont     = []byte(`font-family:Liberation Serif;`)
	svgFamilies = []byte(`font-family:'Liberation Serif','Times New Roman',Times,serif;`)
)

// drawSafely turns a panic inside gonum/plot (it panics on degenerate
// input such as a colour bar of zero range) into an error, so one bad
// figure never takes down the others or the run that exports them.
func drawSafely(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("drawing failed: %v", r)
		}
	}()
	fn()
	return nil
}

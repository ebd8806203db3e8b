// Copyright ©2015 The Gonum Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in gonum/plot's LICENSE file.
//
// Adapted from gonum.org/v1/plot/vg/vgpdf (v0.17.0): that canvas embeds
// its TrueType fonts with the cp1252 code page and hands fpdf the UTF-8
// bytes of every label unconverted, so a PDF reads "Ïˆ" where the figure
// says ψ and cannot hold a glyph outside Windows-1252 at all. This one
// embeds each font as a UTF-8 (Identity-H) subset through fpdf's
// AddUTF8FontFromBytes, which also writes the ToUnicode map that lets a
// reader copy and search the text.

// Package pdfcanvas is a vg.Canvas that draws to a PDF with Unicode text.
package pdfcanvas

import (
	"bufio"
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"

	pdf "codeberg.org/go-pdf/fpdf"

	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
)

// dpi is the nominal resolution of drawing in PDF: one unit is one point.
const dpi = 72

// Canvas implements vg.Canvas, drawing one page of a PDF.
type Canvas struct {
	doc       *pdf.Fpdf
	w, h      vg.Length
	numImages int
	stack     []context
	fonts     map[font.Font]string // registered fonts and their fpdf family names
	err       error                // the first font that could not be read
}

type context struct {
	fill  color.Color
	line  color.Color
	width vg.Length
}

// New returns a PDF canvas of one w×h page.
func New(w, h vg.Length) *Canvas {
	cfg := pdf.InitType{
		UnitStr: "pt",
		Size:    pdf.SizeType{Wd: w.Points(), Ht: h.Points()},
	}
	c := &Canvas{
		doc:   pdf.NewCustom(&cfg),
		w:     w,
		h:     h,
		stack: make([]context, 1),
		fonts: make(map[font.Font]string),
	}
	c.doc.SetMargins(0, 0, 0)
	c.doc.SetAutoPageBreak(false, 0)
	c.doc.AddPage()
	c.Push()
	c.Translate(vg.Point{X: 0, Y: c.h})
	c.Scale(1, -1)
	vg.Initialize(c)
	return c
}

// DPI returns the canvas's nominal resolution.
func (c *Canvas) DPI() float64 { return dpi }

func (c *Canvas) context() *context { return &c.stack[len(c.stack)-1] }

// Size returns the page size.
func (c *Canvas) Size() (w, h vg.Length) { return c.w, c.h }

// SetLineWidth implements vg.Canvas.
func (c *Canvas) SetLineWidth(w vg.Length) {
	c.context().width = w
	c.doc.SetLineWidth(c.unit(w))
}

// SetLineDash implements vg.Canvas.
func (c *Canvas) SetLineDash(dashes []vg.Length, offs vg.Length) {
	ds := make([]float64, len(dashes))
	for i, d := range dashes {
		ds[i] = c.unit(d)
	}
	c.doc.SetDashPattern(ds, c.unit(offs))
}

// SetColor implements vg.Canvas.
func (c *Canvas) SetColor(clr color.Color) {
	if clr == nil {
		clr = color.Black
	}
	c.context().line = clr
	c.context().fill = clr
	r, g, b, a := rgba(clr)
	c.doc.SetFillColor(r, g, b)
	c.doc.SetDrawColor(r, g, b)
	c.doc.SetTextColor(r, g, b)
	c.doc.SetAlpha(a, "Normal")
}

// Rotate implements vg.Canvas.
func (c *Canvas) Rotate(r float64) { c.doc.TransformRotate(-r*180/math.Pi, 0, 0) }

// Translate implements vg.Canvas.
func (c *Canvas) Translate(pt vg.Point) {
	xp, yp := c.pdfPoint(pt)
	c.doc.TransformTranslate(xp, yp)
}

// Scale implements vg.Canvas.
func (c *Canvas) Scale(x float64, y float64) { c.doc.TransformScale(x*100, y*100, 0, 0) }

// Push implements vg.Canvas.
func (c *Canvas) Push() {
	c.stack = append(c.stack, *c.context())
	c.doc.TransformBegin()
}

// Pop implements vg.Canvas.
func (c *Canvas) Pop() {
	c.doc.TransformEnd()
	c.stack = c.stack[:len(c.stack)-1]
}

// Stroke implements vg.Canvas.
func (c *Canvas) Stroke(p vg.Path) {
	if c.context().width > 0 {
		c.pdfPath(p, "D")
	}
}

// Fill implements vg.Canvas.
func (c *Canvas) Fill(p vg.Path) { c.pdfPath(p, "F") }

// FillString implements vg.Canvas: str is UTF-8 and is written as such.
func (c *Canvas) FillString(fnt font.Face, pt vg.Point, str string) {
	if fnt.Font.Size == 0 {
		return
	}
	name, ok := c.font(fnt)
	if !ok {
		return
	}
	c.doc.SetFont(name, "", c.unit(fnt.Font.Size))

	c.Push()
	defer c.Pop()
	c.Translate(pt)
	// fpdf puts the origin at the top left corner.
	c.Scale(1, -1)
	_, h := c.doc.GetFontSize()
	d := c.doc.GetFontDesc(name, "")
	top := 0.81 * h
	if d.Ascent != 0 {
		top = -float64(d.Ascent) * h / float64(d.Ascent-d.Descent)
	}
	w := c.doc.GetStringWidth(str)
	c.doc.MoveTo(-c.doc.GetCellMargin(), top)
	c.doc.CellFormat(w, h, str, "", 0, "BL", false, 0, "")
}

// font registers fnt's TrueType data with the document once and returns
// the family name it goes by.
func (c *Canvas) font(fnt font.Face) (string, bool) {
	if name, ok := c.fonts[fnt.Font]; ok {
		return name, true
	}
	var raw bytes.Buffer
	if _, err := fnt.Face.WriteSourceTo(nil, &raw); err != nil {
		if c.err == nil {
			c.err = fmt.Errorf("pdf: font %q: %w", fnt.Name(), err)
		}
		return "", false
	}
	// fpdf keys fonts by lower-cased family and style; the gonum name
	// (typeface, variant, style, weight) is unique per face.
	name := fmt.Sprintf("f%d", len(c.fonts))
	c.doc.AddUTF8FontFromBytes(name, "", raw.Bytes())
	c.fonts[fnt.Font] = name
	return name, true
}

// DrawImage implements vg.Canvas.
func (c *Canvas) DrawImage(rect vg.Rectangle, img image.Image) {
	opts := pdf.ImageOptions{ImageType: "png", ReadDpi: true}
	c.numImages++
	name := fmt.Sprintf("image_%03d.png", c.numImages)
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		if c.err == nil {
			c.err = fmt.Errorf("pdf: encoding an image: %w", err)
		}
		return
	}
	c.doc.RegisterImageOptionsReader(name, opts, &buf)
	xp, yp := c.pdfPoint(rect.Min)
	wp, hp := c.pdfPoint(rect.Size())
	c.doc.ImageOptions(name, xp, yp, wp, hp, false, opts, 0, "")
}

func (c *Canvas) pdfPath(path vg.Path, style string) {
	var xp, yp float64
	for _, comp := range path {
		switch comp.Type {
		case vg.MoveComp:
			xp, yp = c.pdfPoint(comp.Pos)
			c.doc.MoveTo(xp, yp)
		case vg.LineComp:
			c.doc.LineTo(c.pdfPoint(comp.Pos))
		case vg.ArcComp:
			c.arc(comp, style)
		case vg.CurveComp:
			px, py := c.pdfPoint(comp.Pos)
			switch len(comp.Control) {
			case 1:
				cx, cy := c.pdfPoint(comp.Control[0])
				c.doc.CurveTo(cx, cy, px, py)
			case 2:
				cx, cy := c.pdfPoint(comp.Control[0])
				dx, dy := c.pdfPoint(comp.Control[1])
				c.doc.CurveBezierCubicTo(cx, cy, dx, dy, px, py)
			default:
				panic("pdfcanvas: invalid number of control points")
			}
		case vg.CloseComp:
			c.doc.LineTo(xp, yp)
			c.doc.ClosePath()
		default:
			panic(fmt.Sprintf("pdfcanvas: unknown path component type %d", comp.Type))
		}
	}
	c.doc.DrawPath(style)
}

func (c *Canvas) arc(comp vg.PathComp, style string) {
	x0 := comp.Pos.X + comp.Radius*vg.Length(math.Cos(comp.Start))
	y0 := comp.Pos.Y + comp.Radius*vg.Length(math.Sin(comp.Start))
	c.doc.LineTo(c.unit(x0), c.unit(y0))
	r := c.unit(comp.Radius)
	const deg = 180 / math.Pi
	angle := comp.Angle * deg
	beg := comp.Start * deg
	c.doc.Arc(c.unit(comp.Pos.X), c.unit(comp.Pos.Y), r, r, angle, beg, beg+angle, style)
	x1 := comp.Pos.X + comp.Radius*vg.Length(math.Cos(comp.Start+comp.Angle))
	y1 := comp.Pos.Y + comp.Radius*vg.Length(math.Sin(comp.Start+comp.Angle))
	c.doc.MoveTo(c.unit(x1), c.unit(y1))
}

func (c *Canvas) pdfPoint(pt vg.Point) (float64, float64) { return c.unit(pt.X), c.unit(pt.Y) }

// unit converts a vg.Length to the document's unit, points.
func (c *Canvas) unit(l vg.Length) float64 { return l.Dots(dpi) }

type writerCounter struct {
	io.Writer
	n int64
}

func (w *writerCounter) Write(p []byte) (int, error) {
	n, err := w.Writer.Write(p)
	w.n += int64(n)
	return n, err
}

// WriteTo writes the PDF to w. The canvas is closed after it and may not
// be drawn on again.
func (c *Canvas) WriteTo(w io.Writer) (int64, error) {
	if c.err != nil {
		return 0, c.err
	}
	c.Pop()
	c.doc.Close()
	wc := writerCounter{Writer: w}
	b := bufio.NewWriter(&wc)
	if err := c.doc.Output(b); err != nil {
		return wc.n, err
	}
	err := b.Flush()
	return wc.n, err
}

// rgba converts a colour to fpdf's three 0–255 channels and an alpha.
func rgba(c color.Color) (int, int, int, float64) {
	r, g, b, a := c.RGBA()
	return int(r >> 8), int(g >> 8), int(b >> 8), float64(a) / math.MaxUint16
}

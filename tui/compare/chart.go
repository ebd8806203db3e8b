package compare

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"selmix/tui/style"
)

// EMA smooths v with weight a on the past (0 = raw), at full resolution;
// NaN values are skipped (they stay NaN and do not reset the average).
func EMA(dst, v []float64, a float64) []float64 {
	dst = dst[:0]
	acc, have := 0.0, false
	for _, x := range v {
		switch {
		case math.IsNaN(x):
			dst = append(dst, x)
			continue
		case !have:
			acc, have = x, true
		default:
			acc = a*acc + (1-a)*x
		}
		dst = append(dst, acc)
	}
	return dst
}

// trace is one line of the chart: its points, and a band around it
// sampled per dot column (NaN where it has none).
type trace struct {
	label  string
	xs, ys []float64
	lo, hi []float64 // per dot column; nil for no band
}

// sampler reads a series at any x by linear interpolation between its
// finite points; outside its first and last point it has no value.
type sampler struct {
	xs, ys []float64
}

func newSampler(xs, ys []float64) sampler {
	var s sampler
	for i := range xs {
		if !math.IsNaN(xs[i]) && !math.IsNaN(ys[i]) && !math.IsInf(ys[i], 0) {
			s.xs, s.ys = append(s.xs, xs[i]), append(s.ys, ys[i])
		}
	}
	return s
}

func (s sampler) at(x float64) float64 {
	n := len(s.xs)
	if n == 0 || x < s.xs[0] || x > s.xs[n-1] {
		return math.NaN()
	}
	i := sort.SearchFloat64s(s.xs, x)
	if i < n && s.xs[i] == x {
		return s.ys[i]
	}
	x0, x1 := s.xs[i-1], s.xs[i]
	t := (x - x0) / (x1 - x0)
	return s.ys[i-1] + t*(s.ys[i]-s.ys[i-1])
}

// canvas is a braille dot grid: line dots with the trace that drew each
// cell last, and band dots beneath them.
type canvas struct {
	w, h, dw, dh int
	line, band   []uint8
	owner        []int16
}

func newCanvas(w, h int) *canvas {
	c := &canvas{w: max(1, w), h: max(1, h)}
	c.dw, c.dh = 2*c.w, 4*c.h
	c.line, c.band = make([]uint8, c.w*c.h), make([]uint8, c.w*c.h)
	c.owner = make([]int16, c.w*c.h)
	return c
}

func (c *canvas) set(t, x, y int) {
	if x < 0 || y < 0 || x >= c.dw || y >= c.dh {
		return
	}
	i := (y/4)*c.w + x/2
	c.line[i] |= style.BrailleBit(x, y)
	c.owner[i] = int16(t)
}

func (c *canvas) setBand(x, y int) {
	if x < 0 || y < 0 || x >= c.dw || y >= c.dh {
		return
	}
	c.band[(y/4)*c.w+x/2] |= style.BrailleBit(x, y)
}

// seg draws a Bresenham line of trace t.
func (c *canvas) seg(t, x0, y0, x1, y1 int) {
	style.Line(x0, y0, x1, y1, func(x, y int) { c.set(t, x, y) })
}

// palette colours the traces in turn; the plain theme tells them apart by
// the number at the end of each line.
var palette = []string{"#5fafff", "#ffaf00", "#5fd75f", "#ff5f5f", "#af87ff", "#00d7d7", "#ff87d7", "#d7d75f", "#87afaf", "#ffffff"}

// Mark is the glyph that names trace i at the end of its line and in the
// legend.
func Mark(i int) string {
	const marks = "123456789abcdefghijklmnopqrstuvwxyz"
	return string(marks[i%len(marks)])
}

// yScale maps a value to the chart's vertical axis (f) and back (inv,
// for the axis labels); name is what the header says of it ("" linear).
type yScale struct {
	name   string
	f, inv func(float64) float64
}

var linear = yScale{f: func(v float64) float64 { return v }, inv: func(v float64) float64 { return v }}

// logScale is the log scale of traces in [x0, x1]: log10 where every
// value is positive; where some are ≤ 0 (ψ of a coverage objective, a
// loss gain), the symmetric log sign(v)·log10(1 + |v|/c), linear within
// c of 0 (c the smallest nonzero |v|, at least 1e-4 of the largest), and
// says so.
func logScale(traces []trace, x0, x1 float64) yScale {
	small, big, nonPos := math.Inf(1), 0.0, false
	each(traces, x0, x1, func(v float64) {
		if v <= 0 {
			nonPos = true
		}
		if a := math.Abs(v); a > 0 {
			small, big = math.Min(small, a), math.Max(big, a)
		}
	})
	if !nonPos {
		return yScale{name: "log", f: func(v float64) float64 {
			if v <= 0 {
				return math.NaN()
			}
			return math.Log10(v)
		}, inv: func(u float64) float64 { return math.Pow(10, u) }}
	}
	c := math.Max(small, big*1e-4)
	if math.IsInf(c, 0) || c == 0 {
		c = 1
	}
	return yScale{
		name: "symlog (values ≤ 0)",
		f:    func(v float64) float64 { return math.Copysign(math.Log10(1+math.Abs(v)/c), v) },
		inv:  func(u float64) float64 { return math.Copysign(c*(math.Pow(10, math.Abs(u))-1), u) },
	}
}

// each calls f with every finite value of the traces in [x0, x1] and of
// their bands.
func each(traces []trace, x0, x1 float64, f func(float64)) {
	g := func(v float64) {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			f(v)
		}
	}
	for _, t := range traces {
		for i, y := range t.ys {
			if t.xs[i] >= x0 && t.xs[i] <= x1 {
				g(y)
			}
		}
		for i := range t.lo {
			g(t.lo[i])
			g(t.hi[i])
		}
	}
}

// chart draws traces over x in [x0, x1] in w×h cells (axis included),
// values through sc.
func chart(th *style.Theme, paints []style.Paint, traces []trace, x0, x1 float64, sc yScale, xlabel string, w, h int) string {
	const axisW = 8
	plotW, plotH := max(1, w-axisW), max(1, h-1)
	c := newCanvas(plotW, plotH)
	tf := sc.f
	lo, hi, ok := yRange(traces, x0, x1, tf)
	if !ok {
		return style.Fit(th.Render(th.Dim, "nothing to draw: no run has a value of this series yet"), w, h)
	}
	if x1 <= x0 {
		x1 = x0 + 1
	}
	px := func(x float64) int { return int(math.Round((x - x0) / (x1 - x0) * float64(c.dw-1))) }
	py := func(v float64) int { return int(math.Round((hi - tf(v)) / (hi - lo) * float64(c.dh-1))) }
	c.bands(traces, py, tf)
	rows := c.render(th, paints, c.lines(traces, px, py, tf))
	label := func(v float64) string { return num(sc.inv(v)) }
	lines := make([]string, 0, h)
	for i, row := range rows {
		l := ""
		switch {
		case i == 0:
			l = label(hi)
		case i == len(rows)-1:
			l = label(lo)
		case i == len(rows)/2 && len(rows) > 4:
			l = label((hi + lo) / 2)
		}
		lines = append(lines, th.Render(th.Dim, style.PadLeft(l, axisW-1)+"┤")+row)
	}
	left := fmt.Sprintf("└%s %s", xlabel, xnum(x0))
	right := xnum(x1)
	lines = append(lines, th.Render(th.Dim, strings.Repeat(" ", axisW-1)+style.PadRight(left, max(0, plotW+1-len(right)))+right))
	return strings.Join(lines, "\n")
}

// yRange is the range of the traces' values in [x0, x1] and of their
// bands, through tf (the log scale), padded by 4%; ok is false when no
// value is finite.
func yRange(traces []trace, x0, x1 float64, tf func(float64) float64) (lo, hi float64, ok bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	each(traces, x0, x1, func(v float64) {
		if v = tf(v); !math.IsNaN(v) && !math.IsInf(v, 0) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	})
	if math.IsInf(lo, 0) {
		return 0, 0, false
	}
	if hi-lo < 1e-12 {
		lo, hi = lo-0.01, hi+0.01
	}
	pad := (hi - lo) * 0.04
	return lo - pad, hi + pad, true
}

// bands fills each trace's band (lo to hi per dot column).
func (c *canvas) bands(traces []trace, py func(float64) int, tf func(float64) float64) {
	for _, t := range traces {
		for x := range t.lo {
			if math.IsNaN(t.lo[x]) || math.IsNaN(tf(t.lo[x])) || math.IsNaN(tf(t.hi[x])) {
				continue
			}
			for y := py(t.hi[x]); y <= py(t.lo[x]); y++ {
				c.setBand(x, y)
			}
		}
	}
}

// lines draws each trace's line and returns, by cell, the trace whose
// last point is there (its mark is drawn in that cell).
func (c *canvas) lines(traces []trace, px func(float64) int, py func(float64) int, tf func(float64) float64) map[int]int {
	ends := make([]int, len(traces)) // cell of each trace's last point
	for ti, t := range traces {
		ends[ti] = -1
		px0, py0, have := 0, 0, false
		for i := range t.xs {
			y := tf(t.ys[i])
			if math.IsNaN(y) || math.IsInf(y, 0) || math.IsNaN(t.xs[i]) {
				continue
			}
			x1, y1 := px(t.xs[i]), py(t.ys[i])
			if have {
				c.seg(ti, px0, py0, x1, y1)
			} else {
				c.set(ti, x1, y1)
			}
			px0, py0, have = x1, y1, true
		}
		if have && px0 >= 0 && px0 < c.dw && py0 >= 0 && py0 < c.dh {
			ends[ti] = (py0/4)*c.w + px0/2
		}
	}
	endMark := map[int]int{}
	for ti, e := range ends {
		if e >= 0 {
			endMark[e] = ti
		}
	}
	return endMark
}

// render draws the canvas a row per line: trace marks, then lines in
// their trace's paint, then bands.
func (c *canvas) render(th *style.Theme, paints []style.Paint, endMark map[int]int) []string {
	rows := make([]string, c.h)
	for y := range c.h {
		var b strings.Builder
		for x := range c.w {
			i := y*c.w + x
			if ti, ok := endMark[i]; ok {
				b.WriteString(paints[ti%len(paints)].Render(Mark(ti)))
				continue
			}
			switch {
			case c.line[i] != 0:
				t := int(c.owner[i])
				b.WriteString(paints[t%len(paints)].Render(string(rune(0x2800 + int(c.line[i])))))
			case c.band[i] != 0:
				b.WriteString(th.Render(th.Dim, "░"))
			default:
				b.WriteByte(' ')
			}
		}
		rows[y] = b.String()
	}
	return rows
}

// xnum formats a step or a number of seconds.
func xnum(x float64) string {
	if x == math.Round(x) && math.Abs(x) < 1e9 {
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.1f", x)
}

// num formats an axis value in at most 7 columns.
func num(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	ax := math.Abs(x)
	switch {
	case ax != 0 && (ax < 1e-3 || ax >= 1e5):
		return fmt.Sprintf("%.1e", x)
	case ax >= 1000:
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.4f", x)
}

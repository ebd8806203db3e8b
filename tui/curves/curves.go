// Package curves plots every objective over the run: a braille chart of
// the selected one (raw points, EMA line, pre-trained baseline) and a
// table of all of them with sparklines, the optimized one marked. A key
// switches it to the linear view: whether the change of ψ each refresh
// interval predicted came about (linear.go).
package curves

import (
	"fmt"
	"math"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"selmix/core/metric"
	"selmix/runs/record"
	"selmix/tui/pane"
	"selmix/tui/runstate"
	"selmix/tui/style"
)

// Model is the curves pane.
type Model struct {
	pane.Base
	sel    int     // charted objective; -1 follows the optimized one
	smooth float64 // EMA weight of the past, in [0, 0.95]
	linear bool    // show predicted vs realised Δψ instead
}

// New returns the pane over run.
func New(ctx *pane.Context, run *runstate.State) *Model {
	return &Model{Base: pane.NewBase(ctx, run), sel: -1, smooth: 0.6}
}

func (m *Model) Title() string {
	if m.linear {
		return "linear step · Δψ predicted vs realised"
	}
	return fmt.Sprintf("objectives · EMA %.2g", m.smooth)
}
func (m *Model) ShortHelp() []key.Binding {
	k := m.Ctx.Keys
	if m.linear {
		return []key.Binding{k.Linear}
	}
	return []key.Binding{k.Up, k.Down, k.SmoothLess, k.SmoothMore, k.Linear}
}
func (m *Model) FullHelp() [][]key.Binding {
	k := m.Ctx.Keys
	return [][]key.Binding{{k.Up, k.Down, k.Top, k.SmoothLess, k.SmoothMore, k.Linear}}
}

// Linear reports whether the pane shows predicted vs realised Δψ.
func (m *Model) Linear() bool { return m.linear }

// Smoothing is the EMA weight in use.
func (m *Model) Smoothing() float64 { return m.smooth }

func (m *Model) selected() int {
	if m.sel >= 0 {
		return m.sel
	}
	return max(0, m.Run.Latest.Hyper.Objective.Index())
}

func (m *Model) Update(msg tea.Msg) tea.Cmd {
	kp, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return nil
	}
	n := len(metric.Objectives())
	switch k := m.Ctx.Keys; {
	case key.Matches(kp, k.Linear):
		m.linear = !m.linear
	case m.linear:
		// The objective keys do nothing to this view.
	case key.Matches(kp, k.Up):
		m.sel = (m.selected() + n - 1) % n
	case key.Matches(kp, k.Down):
		m.sel = (m.selected() + 1) % n
	case key.Matches(kp, k.Top):
		m.sel = -1 // back to following the optimized objective
	case key.Matches(kp, k.SmoothMore):
		m.smooth = math.Min(0.95, math.Round((m.smooth+0.1)*100)/100)
	case key.Matches(kp, k.SmoothLess):
		m.smooth = math.Max(0, math.Round((m.smooth-0.1)*100)/100)
	}
	return nil
}

// EMA smooths v with weight a on the past (0 = raw).
func EMA(v []float64, a float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		if i == 0 {
			out[i] = x
			continue
		}
		out[i] = a*out[i-1] + (1-a)*x
	}
	return out
}

func (m *Model) View() string {
	r := m.Run
	if r.Cur == nil {
		return m.Waiting()
	}
	if m.linear {
		return m.linearView()
	}
	_, metW := m.met()
	tableW := 46 + 1 + metW
	tableH := TableRows()
	var chartW, chartH int
	side := m.W >= 100
	if side {
		chartW, chartH = m.W-tableW-2, m.H
	} else {
		chartW, chartH = m.W, m.H-tableH
	}
	chart := ""
	if chartH >= 4 && chartW >= 20 {
		chart = m.chart(chartW, chartH)
	}
	if !side {
		tableW = m.W
	}
	table := m.table(tableW)
	if side {
		return style.JoinH(style.Fit(chart, chartW, m.H), style.Fit("", 2, m.H), style.Fit(table, tableW, m.H))
	}
	if chart == "" {
		return style.Fit(table, m.W, m.H)
	}
	return style.Fit(chart+"\n"+table, m.W, m.H)
}

// TableRows is the height of the objectives table (a header and one row
// per objective): beside the chart (from 100 columns) the pane shows it
// whole only with at least that many rows.
func TableRows() int { return len(metric.Objectives()) + 1 }

// met is, per objective, how many of its coverage constraints hold now
// on validation against α/K ("9/10", "1/2"; "" without a constraint):
// what the table shows beside ψ; w is the column's width.
func (m *Model) met() (cells []string, w int) {
	r := m.Run
	w = 3 // "met"
	for _, o := range metric.Objectives() {
		spec, _ := o.Spec()
		c := ""
		if r.Cur != nil && spec.Constraint != metric.NoConstraint {
			rep := r.Cur.Report
			bound := metric.Params{Alpha: r.Latest.Hyper.Alpha}.Bound(rep.K)
			if spec.Constraint == metric.GroupCoverage {
				c = fmt.Sprintf("%d/2", rep.HTCoverageMet(bound))
			} else {
				c = fmt.Sprintf("%d/%d", rep.CoverageMet(bound), rep.K)
			}
		}
		cells = append(cells, c)
		w = max(w, len(c))
	}
	return cells, w
}

func (m *Model) table(w int) string {
	th := m.Ctx.Theme
	r := m.Run
	opt := r.Latest.Hyper.Objective.Index()
	sel := m.selected()
	var b strings.Builder
	met, metW := m.met()
	b.WriteString(th.Render(th.Dim, fmt.Sprintf("  %-19s %7s %7s %*s  %s", "ψ of (*=optimized)", "now", "Δ pre", metW, "met", "history")))
	sparkW := max(4, w-2-19-1-7-1-7-1-metW-2)
	for o, name := range metric.Objectives() {
		b.WriteByte('\n')
		v := r.Obj[o]
		cur := v[len(v)-1]
		d := cur - r.Baseline[o]
		mark := "  "
		if o == opt {
			mark = "* "
		}
		if o == sel {
			mark = mark[:1] + "▸"
		}
		ds := fmt.Sprintf("%+7.4f", d)
		switch {
		case d > 5e-5:
			ds = th.Render(th.Good, ds)
		case d < -5e-5:
			ds = th.Render(th.Bad, ds)
		}
		line := fmt.Sprintf("%s%-19s %7.4f ", mark, name, cur) + ds + fmt.Sprintf(" %*s", metW, met[o]) + "  " + style.Sparkline(EMA(v, m.smooth), sparkW)
		switch {
		case o == sel:
			line = th.Render(th.Selected, style.PadRight(line, w))
		case o == opt:
			line = th.Render(th.Accent, line)
		}
		b.WriteString(line)
	}
	return b.String()
}

// chart draws the selected objective over steps 0..Total in braille.
func (m *Model) chart(w, h int) string {
	th := m.Ctx.Theme
	r := m.Run
	o := m.selected()
	raw := r.Obj[o]
	ema := EMA(raw, m.smooth)
	base := r.Baseline[o]
	lo, hi := base, base
	for i := range raw {
		lo, hi = math.Min(lo, math.Min(raw[i], ema[i])), math.Max(hi, math.Max(raw[i], ema[i]))
	}
	if hi-lo < 1e-9 {
		lo, hi = lo-0.01, hi+0.01
	}
	pad := (hi - lo) * 0.05
	lo, hi = lo-pad, hi+pad
	const axisW = 7
	name := record.ObjectiveSeries(metric.Objectives()[o]).Label
	if o == r.Latest.Hyper.Objective.Index() {
		name += " (optimized)"
	}
	legend := fmt.Sprintf("⣿ EMA  ⠂ raw  ⠉ pre-trained %.4f", base)
	title := []string{th.Render(th.Bold, name) + "  " + th.Render(th.Dim, legend)}
	if style.Width(name)+2+style.Width(legend) > w {
		// Too narrow for one line: the legend gets its own, never a cut.
		title = []string{th.Render(th.Bold, name), th.Render(th.Dim, legend)}
	}
	plotW, plotH := w-axisW, h-len(title)-1 // title lines and x axis line
	if plotH < 2 {
		return ""
	}
	c := newCanvas(plotW, plotH)
	total := max(r.Latest.Total, r.Steps[len(r.Steps)-1], 1)
	px := func(step int) int { return int(math.Round(float64(step) / float64(total) * float64(c.dw-1))) }
	py := func(v float64) int { return int(math.Round((hi - v) / (hi - lo) * float64(c.dh-1))) }
	for x := 0; x < c.dw; x += 3 {
		c.set(layerBase, x, py(base))
	}
	for i := range raw {
		c.set(layerRaw, px(r.Steps[i]), py(raw[i]))
		if i > 0 {
			c.line(layerEMA, px(r.Steps[i-1]), py(ema[i-1]), px(r.Steps[i]), py(ema[i]))
		} else {
			c.set(layerEMA, px(r.Steps[i]), py(ema[i]))
		}
	}
	lines := title
	rows := c.render(th)
	baseRow := py(base) / 4
	for i, row := range rows {
		label := ""
		switch {
		case i == 0:
			label = num(hi)
		case i == len(rows)-1:
			label = num(lo)
		case i == baseRow:
			label = num(base) // the pre-trained model's ψ, on the ⠉ line
		}
		lines = append(lines, th.Render(th.Dim, style.PadLeft(label, axisW-1)+"┤")+row)
	}
	xl := fmt.Sprintf("%d", total)
	lines = append(lines, th.Render(th.Dim, strings.Repeat(" ", axisW-1)+"└step 0"+style.PadLeft(xl, max(0, plotW-6))))
	return strings.Join(lines, "\n")
}

type layer int

const (
	layerBase layer = iota
	layerRaw
	layerEMA
	nLayers
)

// canvas is a braille dot grid with one bit plane per layer.
type canvas struct {
	w, h, dw, dh int
	bits         [nLayers][]uint8
}

func newCanvas(w, h int) *canvas {
	c := &canvas{w: max(1, w), h: max(1, h)}
	c.dw, c.dh = 2*c.w, 4*c.h
	for l := range c.bits {
		c.bits[l] = make([]uint8, c.w*c.h)
	}
	return c
}

func (c *canvas) set(l layer, x, y int) {
	if x < 0 || y < 0 || x >= c.dw || y >= c.dh {
		return
	}
	c.bits[l][(y/4)*c.w+x/2] |= style.BrailleBit(x, y)
}

// line draws a Bresenham line.
func (c *canvas) line(l layer, x0, y0, x1, y1 int) {
	style.Line(x0, y0, x1, y1, func(x, y int) { c.set(l, x, y) })
}

// render styles each cell by its top layer: EMA over raw over baseline.
func (c *canvas) render(th *style.Theme) []string {
	out := make([]string, c.h)
	for y := range c.h {
		var b strings.Builder
		for x := range c.w {
			i := y*c.w + x
			bits := c.bits[layerBase][i] | c.bits[layerRaw][i] | c.bits[layerEMA][i]
			if bits == 0 {
				b.WriteByte(' ')
				continue
			}
			ch := string(rune(0x2800 + int(bits)))
			switch {
			case c.bits[layerEMA][i] != 0:
				ch = th.Render(th.Accent, ch)
			case c.bits[layerRaw][i] != 0:
				ch = th.Render(th.Dim, ch)
			default:
				ch = th.Render(th.Warn, ch)
			}
			b.WriteString(ch)
		}
		out[y] = b.String()
	}
	return out
}

// num formats an axis value in at most 6 columns.
func num(x float64) string {
	s := fmt.Sprintf("%.4f", x)
	if len(s) > 6 {
		s = fmt.Sprintf("%.3f", x)
	}
	if len(s) > 6 {
		s = fmt.Sprintf("%.2g", x)
	}
	return s
}

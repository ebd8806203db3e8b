// Package heatmap draws the gain matrix G and the mixup distribution P
// side by side (or stacked). When K does not fit, it aggregates blocks of
// classes; a block can be selected and zoomed into at full resolution,
// or, toggled, a window scrolls over the whole matrix. Keys jump to the
// worst class's row and to the pair P samples most.
//
// Everything is computed in Update (a refresh, a resize, a key): the
// O(K²) block sums once per refresh, the visible cells per change; View
// returns the text drawn then.
package heatmap

import (
	"fmt"
	"math"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"selmix/core/train"
	"selmix/tui/history"
	"selmix/tui/pane"
)

// Model is the G and P heatmap pane.
type Model struct {
	pane.Base
	scroll     bool        // scroll a window over the whole matrix instead of aggregating
	rows, cols pane.Scroll // the window: over the matrix (scroll) or the zoomed block
	cursor     cell        // a class pair in the selected block (aggregated)
	zoom       *span       // the block shown at full resolution, nil when not zoomed
	target     cell        // the cell a jump went to
	hasTarget  bool
	why        string // what the target is, for the status line

	// Derived from the current refresh when it arrives.
	rs     *train.Refresh
	loaded bool // G and P are there and K×K
	agg    aggregate

	view string // drawn in Update
}

// cell is a (row, column) class pair.
type cell struct{ i, j int }

// span is a block of rows [r0, r1) × columns [c0, c1).
type span struct{ r0, r1, c0, c1 int }

// aggregate is G averaged and P summed over bs×bs blocks of one refresh.
type aggregate struct {
	rs     *train.Refresh
	bs, nb int
	G, P   []float64 // nb×nb
}

// New returns the pane over run.
func New(ctx *pane.Context, run *history.Run) *Model {
	m := &Model{Base: pane.NewBase(ctx, run)}
	m.sync()
	m.redraw()
	return m
}

func (m *Model) SetSize(w, h int) {
	m.Base.SetSize(w, h)
	m.sync()
	m.redraw()
}

func (m *Model) Title() string {
	switch {
	case m.zoom != nil:
		z := m.zoom
		return fmt.Sprintf("gain G · mixup P · zoom %d–%d × %d–%d", z.r0, z.r1-1, z.c0, z.c1-1)
	case m.rs != nil && !m.loaded:
		return "gain G · mixup P · loading"
	}
	return "gain G · mixup P"
}

func (m *Model) ShortHelp() []key.Binding {
	k := m.Ctx.Keys
	switch {
	case m.zoom != nil:
		return []key.Binding{k.ZoomOut, k.Up, k.Down, k.Left, k.Right, k.Worst, k.TopP}
	case m.scroll:
		return []key.Binding{k.Toggle, k.Up, k.Down, k.Left, k.Right, k.Worst, k.TopP}
	case m.aggregated():
		return []key.Binding{k.Zoom, k.Up, k.Down, k.Left, k.Right, k.Worst, k.TopP, k.Toggle}
	}
	return []key.Binding{k.Toggle, k.Worst, k.TopP}
}
func (m *Model) FullHelp() [][]key.Binding {
	k := m.Ctx.Keys
	return [][]key.Binding{{k.Toggle, k.Up, k.Down, k.Left, k.Right}, {k.Zoom, k.ZoomOut, k.Worst, k.TopP}}
}

// labW is the row label width: a block's index range must fit.
func (m *Model) labW() int {
	K := 0
	if m.rs != nil {
		K = m.rs.K
	}
	return max(5, 2*len(fmt.Sprint(max(0, K-1)))+1)
}

// geometry is how the two maps are placed.
type geometry struct {
	n    int  // cells per side that fit
	side bool // G and P side by side
}

// geometry leaves one more line for the status when K does not fit: then
// the note on aggregation or scrolling takes the spare line.
func (m *Model) geometry() geometry {
	g := m.fit(0)
	if m.rs != nil && m.rs.K > g.n {
		g = m.fit(1)
	}
	return g
}

func (m *Model) fit(extra int) geometry {
	lw := m.labW()
	side := min((m.W-2*(lw+1)-3)/4, m.H-5-extra)
	stack := min((m.W-lw-1)/2, (m.H-7-extra)/2)
	if side >= stack {
		return geometry{max(0, side), true}
	}
	return geometry{max(0, stack), false}
}

// aggregated reports that blocks of classes are shown.
func (m *Model) aggregated() bool {
	return m.loaded && !m.scroll && m.zoom == nil && m.rs.K > m.geometry().n
}

// blockSize is the classes per block side in the aggregated view.
func (m *Model) blockSize() int {
	n := max(1, m.geometry().n)
	return (m.rs.K + n - 1) / n
}

func (m *Model) Update(msg tea.Msg) tea.Cmd {
	m.sync()
	if kp, ok := msg.(tea.KeyPressMsg); ok && m.loaded {
		m.key(kp)
	}
	m.redraw()
	return nil
}

func (m *Model) key(kp tea.KeyPressMsg) {
	k := m.Ctx.Keys
	K, n := m.rs.K, m.geometry().n
	// The window moves over the zoomed block or, scrolling, the matrix.
	lenR, lenC := K, K
	if z := m.zoom; z != nil {
		lenR, lenC = z.r1-z.r0, z.c1-z.c0
	}
	agg := m.aggregated()
	bs := m.blockSize()
	switch {
	case key.Matches(kp, k.Toggle):
		m.scroll, m.zoom = !m.scroll, nil
		m.rows, m.cols = pane.Scroll{}, pane.Scroll{}
		if m.scroll && m.hasTarget {
			m.show(m.target)
		}
	case key.Matches(kp, k.Worst):
		c, why := m.worstCell()
		m.jump(c, why)
	case key.Matches(kp, k.TopP):
		top := argmax(m.rs.P)
		m.jump(cell{top / K, top % K}, "largest P")
	case agg && key.Matches(kp, k.Zoom):
		m.zoomInto(m.cursor)
		if m.hasTarget {
			m.show(m.target)
		}
	case m.zoom != nil && key.Matches(kp, k.ZoomOut):
		m.zoom = nil // the cursor is still in the block
	case key.Matches(kp, k.ZoomOut):
		m.hasTarget = false
	case agg && key.Matches(kp, k.Up):
		m.cursor.i = max(0, m.cursor.i-bs)
	case agg && key.Matches(kp, k.Down):
		m.cursor.i = min(K-1, m.cursor.i+bs)
	case agg && key.Matches(kp, k.Left):
		m.cursor.j = max(0, m.cursor.j-bs)
	case agg && key.Matches(kp, k.Right):
		m.cursor.j = min(K-1, m.cursor.j+bs)
	case agg && key.Matches(kp, k.Top):
		m.cursor = cell{}
	case key.Matches(kp, k.Up):
		m.rows.ScrollBy(-1, lenR, n)
	case key.Matches(kp, k.Down):
		m.rows.ScrollBy(1, lenR, n)
	case key.Matches(kp, k.Left):
		m.cols.ScrollBy(-1, lenC, n)
	case key.Matches(kp, k.Right):
		m.cols.ScrollBy(1, lenC, n)
	case key.Matches(kp, k.Top):
		m.rows.GotoTop(lenR, n)
		m.cols.GotoTop(lenC, n)
	}
}

// worstCell is the worst class's row at the column P samples most with
// it, or at its largest G when P gives the row no mass (every gain of the
// row is masked); why says which.
func (m *Model) worstCell() (cell, string) {
	rs := m.rs
	K, w := rs.K, rs.Report.Worst
	c := cell{w, argmax(rs.P[w*K : (w+1)*K])}
	if rs.P[w*K+c.j] > 0 {
		return c, "worst class, its largest P"
	}
	c.j = argmax(rs.G[w*K : (w+1)*K])
	return c, "worst class, no P: its largest G"
}

// jump marks c and brings it into view: in its block at full resolution
// when aggregated, in the window when scrolling.
func (m *Model) jump(c cell, why string) {
	m.target, m.hasTarget, m.why = c, true, why
	if m.aggregated() || m.zoom != nil && !m.zoom.has(c) {
		m.zoom = nil
		m.zoomInto(c)
	}
	m.cursor = c
	m.show(c)
}

// zoomInto zooms into the aggregated block holding c.
func (m *Model) zoomInto(c cell) {
	bs, K := m.blockSize(), m.rs.K
	r0, c0 := c.i/bs*bs, c.j/bs*bs
	m.zoom = &span{r0, min(K, r0+bs), c0, min(K, c0+bs)}
	m.rows, m.cols = pane.Scroll{}, pane.Scroll{}
}

// show scrolls the window to centre c, so its neighbours show too.
func (m *Model) show(c cell) {
	n, K := m.geometry().n, m.rs.K
	switch z := m.zoom; {
	case z != nil:
		m.rows.SetOffset(c.i-z.r0-n/2, z.r1-z.r0, n)
		m.cols.SetOffset(c.j-z.c0-n/2, z.c1-z.c0, n)
	case m.scroll:
		m.rows.SetOffset(c.i-n/2, K, n)
		m.cols.SetOffset(c.j-n/2, K, n)
	}
}

func (z *span) has(c cell) bool { return c.i >= z.r0 && c.i < z.r1 && c.j >= z.c0 && c.j < z.c1 }

// sync derives what the pane needs from the run's current refresh, once
// per refresh or when its G and P arrive.
func (m *Model) sync() {
	cur := m.Run.Cur
	loaded := cur != nil && cur.K > 0 && len(cur.G) == cur.K*cur.K && len(cur.P) == cur.K*cur.K
	if cur == m.rs && loaded == m.loaded {
		return
	}
	if m.rs == nil || cur == nil || cur.K != m.rs.K {
		// Another K: positions in the old matrix mean nothing now.
		m.zoom, m.hasTarget, m.cursor = nil, false, cell{}
		m.rows, m.cols = pane.Scroll{}, pane.Scroll{}
	}
	m.rs, m.loaded = cur, loaded
	m.why = "" // the marked cell stays; what it was is of the old refresh
}

// argmax is the index of the largest value (the first on ties; NaN never
// wins).
func argmax(v []float64) int {
	best := 0
	for i, x := range v {
		if x > v[best] || math.IsNaN(v[best]) {
			best = i
		}
	}
	return best
}

// redraw draws the pane for the current state; View returns it.
func (m *Model) redraw() {
	th := m.Ctx.Theme
	rs := m.rs
	switch {
	case rs == nil || rs.K == 0:
		m.view = m.Waiting()
		return
	case !m.loaded:
		m.view = pane.Fit(th.Render(th.Warn, fmt.Sprintf("loading G/P… (refresh at step %d)", rs.Step))+"\n"+
			th.Render(th.Dim, "the other panes work meanwhile"), m.W, m.H)
		return
	}
	g := m.geometry()
	if g.n < 2 {
		m.view = pane.Fit(th.Render(th.Dim, "too small for the heatmaps: enlarge the terminal or press tab for another pane"), m.W, m.H)
		return
	}
	m.view = m.render(rs, g)
}

func (m *Model) View() string { return m.view }

// grid is a view of the K×K matrices reduced to nr×nc cells: classes at
// full resolution, or blocks of bs classes.
type grid struct {
	nr, nc         int
	rowLab, colLab []int // first class of each row / column
	bs             int   // classes per cell side (1: full resolution)
	G, P           []float64
	mark           cell // the cell to mark; -1, -1 for none
}

// window copies the rows r0.. and columns c0.. (nr×nc) of G and P.
func window(rs *train.Refresh, r0, nr, c0, nc int) grid {
	K := rs.K
	gr := grid{nr: nr, nc: nc, bs: 1, rowLab: seq(r0, nr), colLab: seq(c0, nc),
		G: make([]float64, nr*nc), P: make([]float64, nr*nc), mark: cell{-1, -1}}
	for i := range nr {
		copy(gr.G[i*nc:(i+1)*nc], rs.G[(r0+i)*K+c0:])
		copy(gr.P[i*nc:(i+1)*nc], rs.P[(r0+i)*K+c0:])
	}
	return gr
}

// sums aggregates rs in bs×bs blocks, once per refresh and block size.
func (m *Model) sums(rs *train.Refresh, bs int) *aggregate {
	a := &m.agg
	if a.rs == rs && a.bs == bs {
		return a
	}
	K := rs.K
	nb := (K + bs - 1) / bs
	a.rs, a.bs, a.nb = rs, bs, nb
	a.G = append(a.G[:0], make([]float64, nb*nb)...)
	a.P = append(a.P[:0], make([]float64, nb*nb)...)
	for i := range K {
		row := (i / bs) * nb
		for j := range K {
			a.G[row+j/bs] += rs.G[i*K+j]
			a.P[row+j/bs] += rs.P[i*K+j]
		}
	}
	for bi := range nb {
		for bj := range nb {
			rows := min(bs, K-bi*bs)
			cols := min(bs, K-bj*bs)
			a.G[bi*nb+bj] /= float64(rows * cols)
		}
	}
	return a
}

// grid is what the current mode shows, with a note on how (empty when
// the whole matrix fits) and a status line on the selection.
func (m *Model) grid(rs *train.Refresh, n int) (gr grid, note, status string) {
	K := rs.K
	keys := m.Ctx.Keys
	switch z := m.zoom; {
	case K <= n:
		gr = window(rs, 0, K, 0, K)
	case z != nil:
		nr, nc := min(n, z.r1-z.r0), min(n, z.c1-z.c0)
		r0, c0 := z.r0+m.rows.Offset(z.r1-z.r0, n), z.c0+m.cols.Offset(z.c1-z.c0, n)
		gr = window(rs, r0, nr, c0, nc)
		note = fmt.Sprintf("zoomed: rows %d–%d × cols %d–%d at full resolution (hjkl scroll, %s back)",
			z.r0, z.r1-1, z.c0, z.c1-1, keys.ZoomOut.Help().Key)
	case m.scroll:
		r0, c0 := m.rows.Offset(K, n), m.cols.Offset(K, n)
		gr = window(rs, r0, n, c0, n)
		note = fmt.Sprintf("K=%d: rows %d–%d, cols %d–%d (hjkl scroll, %s aggregate)",
			K, r0, r0+n-1, c0, c0+n-1, keys.Toggle.Help().Key)
	default:
		bs := m.blockSize()
		a := m.sums(rs, bs)
		labels := make([]int, a.nb)
		for i := range labels {
			labels[i] = i * bs
		}
		gr = grid{nr: a.nb, nc: a.nb, bs: bs, rowLab: labels, colLab: labels, G: a.G, P: a.P,
			mark: cell{m.cursor.i / bs, m.cursor.j / bs}}
		note = fmt.Sprintf("K=%d aggregated in %d×%d blocks: G mean, P sum (hjkl select, %s scroll)",
			K, bs, bs, keys.Toggle.Help().Key)
		c := gr.mark
		r0, c0 := c.i*bs, c.j*bs
		status = fmt.Sprintf("▸ rows %d–%d × cols %d–%d  G %s  P %.2g  %s zoom",
			r0, min(K, r0+bs)-1, c0, min(K, c0+bs)-1, sci(a.G[c.i*a.nb+c.j]), a.P[c.i*a.nb+c.j], keys.Zoom.Help().Key)
	}
	if z := m.zoom; z != nil {
		status = fmt.Sprintf("▸ showing rows %d–%d × cols %d–%d", gr.rowLab[0], gr.rowLab[0]+gr.nr-1, gr.colLab[0], gr.colLab[0]+gr.nc-1)
	}
	// The marked cell is described where it can be shown: not from a
	// zoomed block it is not in.
	if gr.bs == 1 && m.hasTarget && (m.zoom == nil || m.zoom.has(m.target)) {
		t := m.target
		if i, j := t.i-gr.rowLab[0], t.j-gr.colLab[0]; i >= 0 && i < gr.nr && j >= 0 && j < gr.nc {
			gr.mark = cell{i, j}
		}
		status = fmt.Sprintf("▸ row %s · col %s: G %s, P %.3g", m.classLabel(t.i), m.classLabel(t.j), sci(rs.G[t.i*K+t.j]), rs.P[t.i*K+t.j])
		if m.why != "" {
			status += "  (" + m.why + ")"
		}
	}
	return gr, note, status
}

// classLabel is "index name", or the index alone for unnamed classes
// (whose name is "class index").
func (m *Model) classLabel(k int) string {
	i := fmt.Sprint(k)
	if n := m.Run.ClassName(k); n != "class "+i {
		return i + " " + n
	}
	return i
}

func seq(a, n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = a + i
	}
	return s
}

func (m *Model) render(rs *train.Refresh, geo geometry) string {
	th := m.Ctx.Theme
	gr, note, status := m.grid(rs, geo.n)
	gScale, gMin, pMax := 0.0, 0.0, 0.0
	for _, v := range gr.G {
		gScale = math.Max(gScale, math.Abs(v))
		gMin = math.Min(gMin, v)
	}
	for _, v := range gr.P {
		pMax = math.Max(pMax, v)
	}
	gLines := m.matrix("G (row i, col j)", gr, func(v float64) string {
		if v > 0 {
			return th.GPos[pane.SqrtLevel(v, gScale)]
		}
		return th.GNeg[pane.SqrtLevel(v, gScale)]
	}, gr.G)
	pLines := m.matrix("P = softmax(s·G)", gr, func(v float64) string {
		if v <= 0 {
			return th.PZero
		}
		return th.PLev[pane.SqrtLevel(v, pMax)]
	}, gr.P)
	var body []string
	if geo.side {
		gw := m.labW() + 1 + 2*gr.nc + 3
		for i := range gLines {
			body = append(body, pane.PadRight(gLines[i], gw)+pLines[i])
		}
	} else {
		body = append(gLines, pLines...)
	}
	legend := []string{
		fmt.Sprintf("G: %s%s%s%s ≤0 masked  %s%s%s%s >0  (√ scale)  range %s … %s",
			th.GNeg[0], th.GNeg[1], th.GNeg[2], th.GNeg[3], th.GPos[0], th.GPos[1], th.GPos[2], th.GPos[3], sci(gMin), sci(gScale)),
		fmt.Sprintf("P: %s 0  %s%s%s%s up to %.3g   s = %s", th.PZero, th.PLev[0], th.PLev[1], th.PLev[2], th.PLev[3], pMax, pane.Trimmed(rs.S)),
	}
	if pane.Width(legend[0]) > m.W {
		// Narrow: the same scale in fewer words, never cut.
		legend[0] = fmt.Sprintf("G: %s%s%s%s ≤0  %s%s%s%s >0 (√)  %s…%s",
			th.GNeg[0], th.GNeg[1], th.GNeg[2], th.GNeg[3], th.GPos[0], th.GPos[1], th.GPos[2], th.GPos[3], sci(gMin), sci(gScale))
	}
	if note != "" {
		legend = append(legend, th.Render(th.Warn, note))
	}
	if status != "" {
		legend = append(legend, th.Render(th.Accent, status))
	}
	return pane.Fit(strings.Join(append(body, legend...), "\n"), m.W, m.H)
}

// matrix renders a title line, a column-label line and one line per row.
// The marked cell is drawn as [] without colour (reversed with it), and
// its row label carries a ▸.
func (m *Model) matrix(title string, gr grid, cell func(float64) string, v []float64) []string {
	th := m.Ctx.Theme
	lw := m.labW()
	lines := make([]string, 0, gr.nr+2)
	lines = append(lines, th.Render(th.Bold, title))
	lines = append(lines, th.Render(th.Dim, strings.Repeat(" ", lw+1)+colLabels(gr.colLab)))
	short := gr.rowLab[len(gr.rowLab)-1] < 10 && len(m.Run.Info.ClassNames) > 0 && gr.bs == 1
	for i := range gr.nr {
		var b strings.Builder
		lab := rowLabel(gr.rowLab[i], gr.bs, m.rs.K)
		if short {
			lab = fmt.Sprintf("%d %s", gr.rowLab[i], history.Short(m.Run.ClassName(gr.rowLab[i]), lw-2))
		}
		sep := " "
		if i == gr.mark.i {
			sep = th.Render(th.Accent, "▸")
		}
		b.WriteString(th.Render(th.Dim, pane.PadRight(lab, lw)) + sep)
		for j := range gr.nc {
			c := cell(v[i*gr.nc+j])
			if i == gr.mark.i && j == gr.mark.j {
				if th.Plain {
					c = "[]"
				} else {
					c = th.Selected.Render(c)
				}
			}
			b.WriteString(c)
		}
		lines = append(lines, b.String())
	}
	return lines
}

func sci(x float64) string { return fmt.Sprintf("%+.1e", x) }

// colLabels labels the columns (two characters each). Indices of two or
// more digits would run together, so then only every k-th column gets
// one, left-aligned over its cell.
func colLabels(labels []int) string {
	width := len(fmt.Sprint(labels[len(labels)-1]))
	if width < 2 {
		var b strings.Builder
		for _, l := range labels {
			fmt.Fprintf(&b, "%2d", l)
		}
		return b.String()
	}
	k := (width + 2) / 2 // cells per label, leaving at least one space
	var b strings.Builder
	for j := 0; j < len(labels); j += k {
		fmt.Fprintf(&b, "%-*d", 2*k, labels[j])
	}
	return b.String()
}

// rowLabel is the class index, or the index range of a block of bs.
func rowLabel(first, bs, K int) string {
	end := min(K, first+bs) - 1
	if end <= first {
		return fmt.Sprint(first)
	}
	return fmt.Sprintf("%d-%d", first, end)
}

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

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"selmix/core/loop"
	"selmix/tui/pane"
	"selmix/tui/runstate"
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
	rs     *loop.Refresh
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
	rs     *loop.Refresh
	bs, nb int
	G, P   []float64 // nb×nb
}

// New returns the pane over run.
func New(ctx *pane.Context, run *runstate.State) *Model {
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
	// compact: K fits only with the key on one line, its numbers in the
	// titles, and the marked cell's status in the key's place.
	compact bool
}

// Lines under the matrices: the key of G and of P, and a status line
// (the marked cell, or the selected block).
const fullKey = 3

// geometry leaves one more line for the status when K does not fit: then
// the note on aggregation or scrolling takes the spare line. Where K
// fits with a one-line key (CompactRows) but not with the full one, the
// key is compact.
func (m *Model) geometry() geometry {
	g := m.fit(fullKey)
	if m.rs == nil || m.rs.K <= g.n {
		return g
	}
	if c := m.fit(1); c.n >= m.rs.K && m.compactFits(c.side) {
		c.compact = true
		return c
	}
	return m.fit(fullKey + 1)
}

// CompactRows is the height (borders included) at which the pane shows
// K classes side by side with its compact key: a title and a label line,
// K rows and one key line; FullRows is that with the full key.
func CompactRows(K int) int { return K + 2 + 1 + 2 }

// FullRows: see CompactRows.
func FullRows(K int) int { return K + 2 + fullKey + 2 }

// fit is the geometry with keyLines lines under the matrices.
func (m *Model) fit(keyLines int) geometry {
	lw := m.labW()
	side := min((m.W-2*(lw+1)-3)/4, m.H-2-keyLines)
	stack := min((m.W-lw-1)/2, (m.H-4-keyLines)/2)
	if side >= stack {
		return geometry{n: max(0, side), side: true}
	}
	return geometry{n: max(0, stack)}
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

package heatmap

import (
	"fmt"
	"math"
	"strings"

	"selmix/core/gain"
	"selmix/core/loop"
	"selmix/tui/runstate"
	"selmix/tui/style"
)

// redraw draws the pane for the current state; View returns it.
func (m *Model) redraw() {
	th := m.Ctx.Theme
	rs := m.rs
	switch {
	case rs == nil || rs.K == 0:
		m.view = m.Waiting()
		return
	case !m.loaded:
		m.view = style.Fit(th.Render(th.Warn, fmt.Sprintf("loading G/P… (refresh at step %d)", rs.Step))+"\n"+
			th.Render(th.Dim, "the other panes work meanwhile"), m.W, m.H)
		return
	}
	g := m.geometry()
	if g.n < 2 {
		m.view = style.Fit(th.Render(th.Dim, "too small for the heatmaps: enlarge the terminal or press tab for another pane"), m.W, m.H)
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
func window(rs *loop.Refresh, r0, nr, c0, nc int) grid {
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
func (m *Model) sums(rs *loop.Refresh, bs int) *aggregate {
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
func (m *Model) grid(rs *loop.Refresh, n int) (gr grid, note, status string) {
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

// pTitle names the mixup distribution P as the policy in force derives
// it from G (an unknown policy, as of an older reader, by its name).
func pTitle(p gain.Policy) string {
	switch p {
	case gain.SelMix, "":
		return "P = softmax(s·G)"
	case gain.Uniform:
		return "P = 1/K² uniform"
	case gain.Greedy:
		return "P = argmax G"
	case gain.None, gain.CSST, gain.MiSLAS2:
		return "P = 0, no mixup"
	}
	return "P (" + string(p) + ")"
}

func seq(a, n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = a + i
	}
	return s
}

// scales are what the colours of G and P are relative to: G's largest
// magnitude (gScale) and smallest value, and P's largest.
func scales(G, P []float64) (gMin, gScale, pMax float64) {
	for _, v := range G {
		gScale = math.Max(gScale, math.Abs(v))
		gMin = math.Min(gMin, v)
	}
	for _, v := range P {
		pMax = math.Max(pMax, v)
	}
	return gMin, gScale, pMax
}

// compactKey is the key on one line (gKey beside pKey) with its numbers
// in the matrices' titles: "G(i,j) -4.0e-03…+2.0e-02" over
// "G ····:::: ≤0 ░░▒▒▓▓██ >0 √", "P = softmax(s·G)  s = 10" over
// "P  · 0 ░░▒▒▓▓██ ≤0.975".
func (m *Model) compactKey(s, gMin, gScale, pMax float64) (gHead, pHead, gKey, pKey string) {
	th := m.Ctx.Theme
	policy := m.Run.Latest.Hyper.Policy
	gHead = "G(i,j) " + sci(gMin) + "…" + sci(gScale)
	pHead = pTitle(policy)
	if policy == gain.SelMix || policy == "" {
		pHead += "  s = " + style.Trimmed(s)
	}
	gKey = fmt.Sprintf("G %s%s%s%s ≤0 %s%s%s%s >0 √",
		th.GNeg[0], th.GNeg[1], th.GNeg[2], th.GNeg[3], th.GPos[0], th.GPos[1], th.GPos[2], th.GPos[3])
	pKey = fmt.Sprintf("P %s 0 %s%s%s%s ≤%.3g", th.PZero, th.PLev[0], th.PLev[1], th.PLev[2], th.PLev[3], pMax)
	return gHead, pHead, gKey, pKey
}

// gWidth is the width of the G matrix's column (side by side) with nc
// columns: the P matrix starts there.
func (m *Model) gWidth(nc int) int { return m.labW() + 1 + 2*nc + 3 }

// compactFits: the compact titles and key fit the pane's width whole,
// side by side or stacked, with the current refresh's numbers.
func (m *Model) compactFits(side bool) bool {
	rs := m.rs
	gMin, gScale, pMax := scales(rs.G, rs.P)
	gT, pT, gK, pK := m.compactKey(rs.S, gMin, gScale, pMax)
	if !side {
		return max(style.Width(gT), style.Width(pT), style.Width(gK)+3+style.Width(pK)) <= m.W
	}
	gw := m.gWidth(rs.K)
	pw := m.labW() + 1 + 2*rs.K
	return max(style.Width(gT), style.Width(gK)) < gw && gw+max(style.Width(pT), style.Width(pK), pw) <= m.W
}

func (m *Model) render(rs *loop.Refresh, geo geometry) string {
	th := m.Ctx.Theme
	gr, note, status := m.grid(rs, geo.n)
	gMin, gScale, pMax := scales(gr.G, gr.P)
	gHead, pHead := "G (row i, col j)", pTitle(m.Run.Latest.Hyper.Policy)
	var gKey, pKey string
	if geo.compact {
		gHead, pHead, gKey, pKey = m.compactKey(rs.S, gMin, gScale, pMax)
	}
	gLines := m.matrix(gHead, gr, func(v float64) string {
		if v > 0 {
			return th.GPos[style.SqrtLevel(v, gScale)]
		}
		return th.GNeg[style.SqrtLevel(v, gScale)]
	}, gr.G)
	policy := m.Run.Latest.Hyper.Policy
	pLines := m.matrix(pHead, gr, func(v float64) string {
		if v <= 0 {
			return th.PZero
		}
		return th.PLev[style.SqrtLevel(v, pMax)]
	}, gr.P)
	var body []string
	gw := m.gWidth(gr.nc)
	if geo.side {
		for i := range gLines {
			body = append(body, style.PadRight(gLines[i], gw)+pLines[i])
		}
	} else {
		body = append(gLines, pLines...)
	}
	if geo.compact {
		// One key line, or the marked cell's status in its place.
		key := style.PadRight(gKey, gw) + pKey
		if !geo.side {
			key = gKey + "   " + pKey
		}
		if status != "" {
			key = th.Render(th.Accent, status)
		}
		return style.Fit(strings.Join(append(body, key), "\n"), m.W, m.H)
	}
	legend := []string{
		fmt.Sprintf("G: %s%s%s%s ≤0 masked  %s%s%s%s >0  (√ scale)  range %s … %s",
			th.GNeg[0], th.GNeg[1], th.GNeg[2], th.GNeg[3], th.GPos[0], th.GPos[1], th.GPos[2], th.GPos[3], sci(gMin), sci(gScale)),
		fmt.Sprintf("P: %s 0  %s%s%s%s up to %.3g", th.PZero, th.PLev[0], th.PLev[1], th.PLev[2], th.PLev[3], pMax),
	}
	if policy == gain.SelMix || policy == "" {
		legend[1] += "   s = " + style.Trimmed(rs.S)
	} else {
		legend[1] += "   policy " + string(policy)
	}
	if style.Width(legend[0]) > m.W {
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
	return style.Fit(strings.Join(append(body, legend...), "\n"), m.W, m.H)
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
			lab = fmt.Sprintf("%d %s", gr.rowLab[i], runstate.Short(m.Run.ClassName(gr.rowLab[i]), lw-2))
		}
		sep := " "
		if i == gr.mark.i {
			sep = th.Render(th.Accent, "▸")
		}
		b.WriteString(th.Render(th.Dim, style.PadRight(lab, lw)) + sep)
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

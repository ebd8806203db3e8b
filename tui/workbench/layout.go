package workbench

import (
	"selmix/tui/curves"
	"selmix/tui/heatmap"
)

// layout is how the panes share the screen.
type layout int

const (
	tabs   layout = iota // one pane at a time under a tab bar (below 120×36)
	medium               // classes | G·P; s·λ or curves full width; events
	grid                 // every pane at once (from 150×46)
)

func (m *Model) setSize(w, h int) {
	m.w, m.h = max(w, 20), max(h, 8)
	switch {
	case m.w >= 150 && m.h >= 46:
		m.layout = grid
	case m.w >= 120 && m.h >= 36:
		m.layout = medium
	default:
		m.layout = tabs
	}
	m.help.SetWidth(m.w)
	m.header.SetSize(m.w, 2)
	for i, r := range m.rects() {
		m.panes[i].SetSize(r.w-2, r.h-2)
	}
}

type rect struct{ w, h int }

// rects sizes the panes: a grid when there is room for all five, two
// rows and a strip of events when there is room for the curves beside
// their table (s·λ and the curves then share the middle row: the focused
// one of the two is shown), else one pane at a time.
func (m *Model) rects() [nPanes]rect {
	var r [nPanes]rect
	if m.layout == tabs {
		ph := m.h - 5 // header 2, tabs 1, status 1, help 1
		for i := range r {
			r[i] = rect{m.w, ph}
		}
		return r
	}
	body := m.h - 3 // header 2, help 1
	// The top row needs K rows plus headers and legends; the rest goes to
	// curves and the log rather than to blank space.
	h1 := body * 45 / 100
	if K := m.run.K(); K > 0 {
		h1 = min(h1, max(heatmap.FullRows(K), 12))
	}
	l1 := m.w * 45 / 100
	r[paneClasses] = rect{l1, h1}
	r[paneHeatmap] = rect{m.w - l1, h1}
	if m.layout == medium {
		// Taller and evener top row than the grid's: K = 10 fits whole.
		// The curves' table must fit whole beside their chart (need
		// rows), and the events should show 3 lines (5 rows): where
		// they would not, the G·P pane gives up to 2 rows by keying G
		// and P on one line (at 120×36, K = 10: 15 rows, not 17).
		need := curves.TableRows() + 2
		const events = 5
		h1 = body * 55 / 100
		if K := m.run.K(); K > 0 {
			h1 = min(h1, max(heatmap.FullRows(K), 12))
			if short := events - (body - h1 - need); short > 0 {
				h1 -= max(0, min(short, h1-max(heatmap.CompactRows(K), 12)))
			}
		}
		l1 = m.w / 2
		r[paneClasses] = rect{l1, h1}
		r[paneHeatmap] = rect{m.w - l1, h1}
		h3 := max(4, (body-h1)/4)
		h2 := body - h1 - h3
		switch {
		case h2 < need:
			// The table first: the events give up to all but one line
			// for it.
			if d := min(need-h2, h3-3); d > 0 {
				h2, h3 = h2+d, h3-d
			}
		case h3 < events:
			// The events take the rows the table does not need.
			d := min(events-h3, h2-need)
			h2, h3 = h2-d, h3+d
		}
		r[paneMultipliers] = rect{m.w, h2}
		r[paneCurves] = rect{m.w, h2}
		r[paneLog] = rect{m.w, h3}
		return r
	}
	h2 := (body - h1) * 55 / 100
	h3 := body - h1 - h2
	l2 := m.w * 35 / 100
	r[paneMultipliers] = rect{l2, h2}
	r[paneCurves] = rect{m.w - l2, h2}
	r[paneLog] = rect{m.w, h3}
	return r
}

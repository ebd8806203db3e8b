package browser

import (
	"fmt"
	"math"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"selmix/internal/safetext"
	"selmix/tui/style"
)

func (m *Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	v.WindowTitle = "selmix runs"
	return v
}

// rows is how many runs fit in the list.
func (m *Model) rows() int { return max(1, m.h-6) }

// Render is the screen as text, exactly w×h.
func (m *Model) Render() string {
	th := m.ctx.Theme
	head := th.Render(th.Title, "selmix runs") + "  " + th.Render(th.Dim, safetext.Line(m.root))
	if m.loaded {
		head += "  " + fmt.Sprintf("%d runs · %d shown · %d marked", len(m.all), len(m.view), len(m.marked))
	}
	fl := "/ " + m.filter
	switch {
	case m.typing:
		fl = th.Render(th.Accent, "/ "+m.filter+"▏")
	case m.filter == "":
		fl = th.Render(th.Dim, "/ filter: words, key=value, key~part (policy=uniform objective~recall)")
	}
	status := ""
	switch {
	case m.err != nil:
		status = th.Render(th.Bad, "error: "+safetext.Line(m.err.Error()))
	case m.note != "":
		status = th.Render(th.Warn, m.note)
	case len(m.view) > 0:
		e := &m.all[m.view[m.sel]]
		status = th.Render(th.Dim, e.ID+"  "+e.Dir)
	}
	body := th.Render(th.Dim, "reading the runs…")
	switch {
	case m.loaded && len(m.all) == 0:
		body = th.Render(th.Dim, "no runs in "+safetext.Line(m.root)+" (selmix run --headless makes one)")
	case m.loaded && len(m.view) == 0:
		body = th.Render(th.Dim, "no run matches the filter (esc clears it)")
	case m.loaded:
		body = m.table(m.w-2, m.h-5)
	}
	title := "runs · sorted by " + m.sortBy.String()
	if m.desc {
		title += " ↓"
	} else {
		title += " ↑"
	}
	frame := style.Frame(th, title, body, m.w, m.h-4, true)
	return style.Fit(strings.Join([]string{head, fl, frame, status, m.help()}, "\n"), m.w, m.h)
}

func (m *Model) help() string {
	k := m.ctx.Keys
	if m.typing {
		return m.ctx.Theme.Render(m.ctx.Theme.Dim, "type to filter  enter done  esc clear  ctrl+u erase")
	}
	parts := []string{
		k.Search.Help().Key + " filter", k.Sort.Help().Key + "/S sort", "space mark",
		k.Accept.Help().Key + " open", "c compare", k.Quit.Help().Key + " quit",
	}
	return m.ctx.Theme.Render(m.ctx.Theme.Dim, strings.Join(parts, "  "))
}

// table is the list in w columns and h lines: a header line, then as
// many runs as fit, scrolled to keep the selection in view.
func (m *Model) table(w, h int) string {
	th := m.ctx.Theme
	cols := m.layout(w)
	cells := func(e *Row) []string {
		out := make([]string, len(cols))
		for i, c := range cols {
			out[i] = m.cell(c.col, e)
			if c.col == ColName {
				out[i] = elideMiddle(out[i], c.w)
			}
		}
		return out
	}
	line := func(cells []string) string {
		var b strings.Builder
		for i, c := range cols {
			if i > 0 {
				b.WriteString("  ")
			}
			if c.right {
				b.WriteString(style.PadLeft(cells[i], c.w))
			} else {
				b.WriteString(style.PadRight(cells[i], c.w))
			}
		}
		return b.String()
	}
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.col.String()
		if c.col == m.sortBy {
			if m.desc {
				names[i] += "↓"
			} else {
				names[i] += "↑"
			}
		}
	}
	out := []string{"    " + th.Render(th.Bold, line(names))}
	n := max(1, h-1)
	if m.sel < m.top {
		m.top = m.sel
	}
	if m.sel >= m.top+n {
		m.top = m.sel - n + 1
	}
	m.top = max(0, min(m.top, len(m.view)-n))
	for k := m.top; k < len(m.view) && k < m.top+n; k++ {
		e := &m.all[m.view[k]]
		cur, mark := "  ", "  "
		if k == m.sel {
			cur = "▶ "
		}
		if m.marked[e.ID] {
			mark = "● "
		}
		text := line(cells(e))
		switch {
		case k == m.sel && !th.Plain:
			text = th.Selected.Render(text)
		case e.Status == "live" || e.Status == "paused":
			text = th.Render(th.Accent, text)
		case e.Status == "crashed" || e.Status == "error" || e.Status == "broken":
			text = th.Render(th.Bad, text)
		case e.Status == "stopped":
			text = th.Render(th.Warn, text)
		}
		out = append(out, cur+mark+text)
	}
	return style.Fit(strings.Join(out, "\n"), w, h)
}

type colSpec struct {
	col   Column
	w     int
	right bool
}

// layout picks the columns that fit in w and their widths: numbers keep
// theirs, the run's name, objective and tags share what is left, and the
// tags and policy go first when the screen is narrow.
func (m *Model) layout(w int) []colSpec {
	avail := w - 4 // cursor and mark
	natural := func(c Column, lo, hi int) int {
		n := max(lo, style.Width(c.String())+1)
		for _, i := range m.view {
			n = max(n, style.Width(m.cell(c, &m.all[i])))
			if n >= hi {
				return hi
			}
		}
		return n
	}
	specs := []colSpec{
		{ColName, natural(ColName, 8, 30), false},
		{ColStatus, natural(ColStatus, 6, 8), false},
		{ColObjective, natural(ColObjective, 9, 18), false},
		{ColPolicy, natural(ColPolicy, 6, 10), false},
		{ColSteps, 6, true},
		{ColFinal, 7, true},
		{ColBest, 7, true},
		{ColAge, 4, true},
		{ColTags, natural(ColTags, 5, 40), false},
	}
	total := func() int {
		t := 0
		for _, s := range specs {
			t += s.w + 2
		}
		return t - 2
	}
	drop := func(c Column) {
		for i, s := range specs {
			if s.col == c {
				specs = append(specs[:i], specs[i+1:]...)
				return
			}
		}
	}
	shrink := func(c Column, lo int) {
		for i := range specs {
			if specs[i].col == c {
				specs[i].w = max(lo, specs[i].w-(total()-avail))
			}
		}
	}
	// Shrink, then drop, in order of what is least missed.
	shrink(ColTags, 5)
	if total() > avail {
		shrink(ColName, 12)
	}
	if total() > avail {
		shrink(ColObjective, 9)
	}
	if total() > avail {
		drop(ColTags)
	}
	if total() > avail {
		drop(ColPolicy)
	}
	if total() > avail {
		drop(ColAge)
	}
	if total() < avail { // the last column takes what is left
		specs[len(specs)-1].w += avail - total()
	}
	return specs
}

func (m *Model) cell(c Column, e *Row) string {
	switch c {
	case ColName:
		return e.Label()
	case ColStatus:
		return e.Status
	case ColObjective:
		return e.Objective
	case ColPolicy:
		return e.Policy
	case ColSteps:
		return fmt.Sprint(e.Steps)
	case ColFinal:
		return num(e.Final)
	case ColBest:
		return num(e.Best)
	case ColAge:
		if e.Created.IsZero() {
			return "-"
		}
		return Age(m.now().Sub(e.Created))
	case ColTags:
		return strings.Join(e.Tags, ",")
	}
	return ""
}

func num(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.4f", x)
}

// Age is d in one short unit: 45s, 12m, 5h, 3d, 7w.
func Age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(0, int(d.Seconds())))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	case d < 14*24*time.Hour:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
	return fmt.Sprintf("%dw", int(d.Hours()/24/7))
}

// elideMiddle fits name into w columns keeping its end, where names of
// one experiment differ (min-recall-selmix-fork-2 and -fork-3 both cut
// to "min-recall-s…" at the end): a third of it from the start, "…",
// the rest from the end.
func elideMiddle(name string, w int) string {
	if style.Width(name) <= w || w < 5 {
		return name
	}
	r := []rune(name)
	head := (w - 1) / 3
	tail := w - 1 - head
	for tail > 0 && style.Width(string(r[len(r)-tail:])) > w-1-head {
		tail--
	}
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}

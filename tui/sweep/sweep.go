// Package sweep is the workbench's sweep view: the members of a sweep
// grouped by configuration (every column but seed), each group with the
// mean ± standard deviation over its seeds of ψ now and best ψ, and under
// it one line per member with its seed, state, step, ψ now and best, and
// a sparkline of ψ over its refreshes. Any column sorts the view. It reads
// nothing itself: Poll reads the sweep off the UI goroutine and sends
// StatusMsg. Enter picks the selected member; the caller opens (finished)
// or attaches to (live) its run.
package sweep

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"selmix/core/safetext"
	"selmix/runs/sweep"
	"selmix/tui/dialog"
	"selmix/tui/internal/wait"
	"selmix/tui/pane"
	"selmix/tui/style"
)

// StatusMsg carries a fresh read of the sweep (owned by the receiver).
type StatusMsg struct{ Status *sweep.Status }

// ErrMsg is a failed read; the last status stays on screen.
type ErrMsg struct{ Err error }

// Poll reads the sweep with read every `every` until ctx ends and sends
// each result to send (normally tea.Program.Send). Run it in its own
// goroutine.
func Poll(ctx context.Context, read func(context.Context) (*sweep.Status, error), send func(tea.Msg), every time.Duration) {
	defer func() {
		// A bug here must reach the screen, not kill the process with the
		// terminal left in raw mode.
		if r := recover(); r != nil {
			send(ErrMsg{fmt.Errorf("sweep reader: %v", r)})
		}
	}()
	for {
		st, err := read(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			send(ErrMsg{err})
		} else {
			send(StatusMsg{st})
		}
		if !wait.Sleep(ctx, every) {
			return
		}
	}
}

// Model is the sweep view; it is a whole Bubble Tea program's model.
type Model struct {
	ctx     *pane.Context
	id      string
	st      *sweep.Status
	err     error
	note    string // a one-off message (e.g. "member 3 has no run yet")
	sel     int    // the selected member (an index into st.Members)
	top     int    // first row shown
	w, h    int
	chosen  int
	sortCol int  // the column the view is sorted by (see columns)
	desc    bool // sorted high to low
	dialogs *dialog.Stack
}

// New returns the view of sweep id.
func New(ctx *pane.Context, id string) *Model {
	return &Model{ctx: ctx, id: id, chosen: -1, w: 80, h: 24, dialogs: dialog.NewStack(ctx)}
}

// Chosen is the member the user pressed Enter on (a run to open), if any.
func (m *Model) Chosen() (index int, runID string, ok bool) {
	if m.chosen < 0 || m.st == nil {
		return 0, "", false
	}
	return m.chosen, m.st.Members[m.chosen].RunID, true
}

// Live reports whether the chosen member's run is running now.
func (m *Model) Live() bool {
	i, _, ok := m.Chosen()
	return ok && m.st.Members[i].Category == sweep.Running
}

// Select moves the selection to member i (the caller restores it when
// the view comes back from a member's workbench).
func (m *Model) Select(i int) { m.sel = max(0, i) }

// SetSize sets the screen size.
func (m *Model) SetSize(w, h int) { m.w, m.h = w, h }

func (m *Model) Init() tea.Cmd { return nil }

func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.SetSize(msg.Width, msg.Height)
	case StatusMsg:
		m.st, m.err = msg.Status, nil
		m.sel = max(0, min(m.sel, len(m.st.Members)-1))
		m.sortCol = min(m.sortCol, len(m.columns())-1)
	case ErrMsg:
		m.err = msg.Err
	case tea.KeyPressMsg:
		return m, m.key(msg)
	}
	return m, nil
}

func (m *Model) key(kp tea.KeyPressMsg) tea.Cmd {
	if m.dialogs.Len() > 0 {
		if _, ok := m.dialogs.Update(kp).(dialog.Quit); ok {
			return tea.Quit
		}
		return nil
	}
	k := m.ctx.Keys
	m.note = ""
	order := m.memberOrder()
	pos := slices.Index(order, m.sel)
	switch {
	case key.Matches(kp, k.Help):
		m.dialogs.Push(m.helpDialog())
	case key.Matches(kp, k.Quit), key.Matches(kp, k.Cancel):
		return tea.Quit
	case key.Matches(kp, k.Up):
		pos--
	case key.Matches(kp, k.Down):
		pos++
	case key.Matches(kp, k.Top):
		pos = 0
	case key.Matches(kp, k.Bottom):
		pos = len(order) - 1
	case key.Matches(kp, k.Left), key.Matches(kp, k.Right):
		if m.st != nil {
			n := len(m.columns())
			d := 1
			if key.Matches(kp, k.Left) {
				d = n - 1
			}
			m.sortCol = (m.sortCol + d) % n
		}
	case key.Matches(kp, k.Sort):
		m.desc = !m.desc
	case key.Matches(kp, k.Accept):
		if len(order) == 0 {
			return nil
		}
		if mem := m.st.Members[m.sel]; mem.RunID == "" {
			m.note = fmt.Sprintf("member %d has no run yet (%s)", mem.Index, mem.StateText())
			return nil
		}
		m.chosen = m.sel
		return tea.Quit
	}
	if len(order) > 0 && pos >= -1 {
		m.sel = order[max(0, min(pos, len(order)-1))]
	}
	return nil
}

func (m *Model) helpDialog() dialog.Dialog {
	k := m.ctx.Keys
	type item = dialog.Item
	return dialog.NewHelp(m.ctx, []dialog.Group{
		{Name: "members", Items: []item{
			{B: k.Up, Desc: "previous member"}, {B: k.Down, Desc: "next member"},
			{B: k.Top, Desc: "first member"}, {B: k.Bottom, Desc: "last member"},
			{B: k.Accept, Desc: "open a finished run, attach to a live one"},
		}},
		{Name: "sort", Items: []item{
			{B: k.Left, Desc: "sort by the column to the left"}, {B: k.Right, Desc: "sort by the column to the right"},
			{B: k.Sort, Desc: "reverse the order"},
		}},
		{Name: "view", Items: []item{{B: k.Help, Desc: "this help"}, {B: k.Quit, Desc: "quit"}}},
	}, "groups: members that differ only by seed, with mean ± std over their seeds", nil, nil, nil)
}

func (m *Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	v.WindowTitle = "selmix sweep " + m.id
	return v
}

// Render is the screen as text, exactly w×h.
func (m *Model) Render() string {
	th := m.ctx.Theme
	head := th.Render(th.Title, "selmix sweep "+m.id)
	if m.st != nil {
		head += "  " + m.st.Executor + "  " + th.Render(th.Dim, m.st.Summary())
	}
	status := ""
	switch {
	case m.err != nil:
		status = th.Render(th.Bad, "error: "+safetext.Line(m.err.Error()))
	case m.note != "":
		status = th.Render(th.Warn, m.note)
	case m.st != nil && m.sel < len(m.st.Members) && m.st.Members[m.sel].Err != "":
		status = th.Render(th.Bad, fmt.Sprintf("member %d: %s", m.sel, safetext.Line(m.st.Members[m.sel].Err)))
	case m.st != nil && len(m.st.Notes) > 0:
		status = th.Render(th.Warn, safetext.Line(strings.Join(m.st.Notes, "; ")))
	case m.st != nil && m.st.Done():
		status = th.Render(th.Good, "nothing running or queued")
	}
	body := th.Render(th.Dim, "reading the sweep…")
	if m.st != nil {
		body = m.table(m.w-2, m.h-5)
	}
	k := m.ctx.Keys
	help := th.Render(th.Dim, fmt.Sprintf("%s help  %s/%s select  %s open a finished run, attach to a live one  %s/%s sort column  %s reverse  %s quit",
		k.Help.Help().Key, k.Up.Help().Key, k.Down.Help().Key, k.Accept.Help().Key, k.Left.Help().Key, k.Right.Help().Key, k.Sort.Help().Key, k.Quit.Help().Key))
	frame := style.Frame(th, "members by configuration", body, m.w, m.h-3, true)
	screen := style.Fit(strings.Join([]string{head, frame, status, help}, "\n"), m.w, m.h)
	return m.dialogs.Draw(screen, m.w, m.h)
}

// column is one column of the table: its heading, a member's cell, and
// the value members and groups sort by.
type column struct {
	name   string
	right  bool // right-aligned (numbers)
	config bool // a sweep column but seed: the same across a group
	cell   func(sweep.MemberStatus) string
	key    func(sweep.MemberStatus) float64  // NaN: sort by cell text
	agg    func([]sweep.MemberStatus) string // a group's cell; nil: blank
}

// columns are "#", the sweep's columns, state, (slurm,) step, ψ now and
// best ψ.
func (m *Model) columns() []column {
	nan := func(sweep.MemberStatus) float64 { return math.NaN() }
	cols := []column{{name: "#", right: true, cell: func(ms sweep.MemberStatus) string { return fmt.Sprint(ms.Index) },
		key: func(ms sweep.MemberStatus) float64 { return float64(ms.Index) }}}
	if m.st == nil {
		return cols
	}
	for c, name := range sweep.ShortNames(m.st.Columns) {
		cell := func(ms sweep.MemberStatus) string {
			if c < len(ms.Values) {
				return ms.ValueTexts()[c]
			}
			return "-"
		}
		key := func(ms sweep.MemberStatus) float64 {
			if x, err := strconv.ParseFloat(cell(ms), 64); err == nil {
				return x
			}
			return math.NaN()
		}
		col := column{name: name, cell: cell, key: key, config: m.st.Columns[c] != sweep.SeedKey}
		if col.config {
			col.agg = func(ms []sweep.MemberStatus) string { return cell(ms[0]) }
		} else {
			col.agg = func(ms []sweep.MemberStatus) string { return fmt.Sprintf("n=%d", len(ms)) }
		}
		cols = append(cols, col)
	}
	cols = append(cols, column{name: "state", cell: sweep.MemberStatus.StateText, key: nan, agg: states})
	if m.st.Slurm {
		cols = append(cols, column{name: "slurm", cell: sweep.MemberStatus.SlurmText, key: nan})
	}
	psi := func(ms sweep.MemberStatus) float64 { return ms.Psi }
	best := func(ms sweep.MemberStatus) float64 { return ms.Best }
	return append(cols,
		column{name: "step", right: true, cell: sweep.MemberStatus.StepText, key: func(ms sweep.MemberStatus) float64 { return float64(ms.Step) }},
		column{name: "ψ now", right: true, cell: sweep.MemberStatus.PsiText, key: psi, agg: meanStd(psi)},
		column{name: "best ψ", right: true, cell: sweep.MemberStatus.BestText, key: best, agg: meanStd(best)})
}

// meanStd is a group's "mean ± sample std" of get over the members that
// have a value.
func meanStd(get func(sweep.MemberStatus) float64) func([]sweep.MemberStatus) string {
	return func(ms []sweep.MemberStatus) string {
		var xs []float64
		for _, x := range ms {
			if v := get(x); !math.IsNaN(v) {
				xs = append(xs, v)
			}
		}
		return sweep.MeanStd(xs)
	}
}

// states counts a group's members by state: "2 finished, 1 running".
func states(ms []sweep.MemberStatus) string {
	var names []string
	n := map[string]int{}
	for _, x := range ms {
		s := x.StateText()
		if n[s] == 0 {
			names = append(names, s)
		}
		n[s]++
	}
	parts := make([]string, len(names))
	for i, s := range names {
		parts[i] = fmt.Sprintf("%d %s", n[s], s)
	}
	return strings.Join(parts, ", ")
}

// groups are the members that differ only by seed, in first-seen order,
// each a list of member indices.
func (m *Model) groups() [][]int {
	var out [][]int
	keyOf := func(ms sweep.MemberStatus) string {
		var parts []string
		for c, v := range ms.Values {
			if c < len(m.st.Columns) && m.st.Columns[c] != sweep.SeedKey {
				parts = append(parts, v)
			}
		}
		return strings.Join(parts, "\x00")
	}
	at := map[string]int{}
	for i, ms := range m.st.Members {
		k := keyOf(ms)
		g, ok := at[k]
		if !ok {
			g = len(out)
			at[k] = g
			out = append(out, nil)
		}
		out[g] = append(out[g], i)
	}
	return out
}

// sorted orders the groups, and the members inside each, by the sort
// column: numbers as numbers (unknown last), else text; a group sorts by
// its first member in that order (for ψ: by its mean).
func (m *Model) sorted() [][]int {
	if m.st == nil {
		return nil
	}
	col := m.columns()[m.sortCol]
	mem := m.st.Members
	less := func(a, b sweep.MemberStatus) int {
		x, y := col.key(a), col.key(b)
		var c int
		switch {
		case math.IsNaN(x) && math.IsNaN(y):
			c = strings.Compare(col.cell(a), col.cell(b))
		case math.IsNaN(x):
			return 1 // unknown last, either way
		case math.IsNaN(y):
			return -1
		default:
			c = cmp.Compare(x, y)
		}
		if m.desc {
			c = -c
		}
		return cmp.Or(c, cmp.Compare(a.Index, b.Index))
	}
	gs := m.groups()
	mean := func(g []int) sweep.MemberStatus {
		rep := mem[g[0]]
		if col.name == "ψ now" || col.name == "best ψ" {
			var sum float64
			n := 0
			for _, i := range g {
				if v := col.key(mem[i]); !math.IsNaN(v) {
					sum += v
					n++
				}
			}
			rep.Psi, rep.Best = math.NaN(), math.NaN()
			if n > 0 {
				rep.Psi, rep.Best = sum/float64(n), sum/float64(n)
			}
		}
		return rep
	}
	for _, g := range gs {
		slices.SortStableFunc(g, func(a, b int) int { return less(mem[a], mem[b]) })
	}
	slices.SortStableFunc(gs, func(a, b []int) int { return less(mean(a), mean(b)) })
	return gs
}

// memberOrder is the members in the order the table lists them.
func (m *Model) memberOrder() []int {
	var out []int
	for _, g := range m.sorted() {
		out = append(out, g...)
	}
	return out
}

// table is the groups and members in w columns and h lines (a header
// line, then as many rows as fit, scrolled to keep the selection in
// view). A group of one member is one row; a larger group is a row of
// its mean ± std over seeds with its members beneath.
func (m *Model) table(w, h int) string {
	th := m.ctx.Theme
	st := m.st
	cols := m.columns()
	rows := m.tableRows(cols)
	names := make([]string, len(cols))
	for c, col := range cols {
		names[c] = safetext.Line(col.name)
		if c == m.sortCol {
			names[c] += map[bool]string{false: "↑", true: "↓"}[m.desc]
		}
	}
	widths := make([]int, len(cols))
	for c := range cols {
		widths[c] = style.Width(names[c])
		for _, r := range rows {
			widths[c] = max(widths[c], style.Width(r.cells[c]))
		}
	}
	line := func(cells []string) string {
		var b strings.Builder
		for c, cell := range cells {
			if c > 0 {
				b.WriteString("  ")
			}
			if cols[c].right {
				b.WriteString(style.PadLeft(cell, widths[c]))
			} else {
				b.WriteString(style.PadRight(cell, widths[c]))
			}
		}
		return b.String()
	}
	fixed := 2 + style.Width(line(names)) + 2
	spark := max(0, w-fixed)
	out := []string{"  " + th.Render(th.Bold, line(names)) + "  " + th.Render(th.Bold, style.PadRight("ψ over refreshes", spark))}
	n := max(1, h-1)
	m.scrollTo(rows, n)
	for i := m.top; i < len(rows) && i < m.top+n; i++ {
		r := rows[i]
		if r.member < 0 {
			out = append(out, "  "+th.Render(th.Bold, line(r.cells)))
			continue
		}
		mem := st.Members[r.member]
		mark := "  "
		if r.member == m.sel {
			mark = "▶ "
		}
		text := line(r.cells) + "  " + style.PadRight(style.Sparkline(r.hist, spark), spark)
		switch {
		case r.member == m.sel && !th.Plain:
			text = th.Selected.Render(text)
		case mem.Category == sweep.Failed:
			text = th.Render(th.Bad, text)
		case mem.Category == sweep.Finished:
			text = th.Render(th.Good, text)
		case mem.Category == sweep.Pending:
			text = th.Render(th.Dim, text)
		}
		out = append(out, mark+text)
	}
	return style.Fit(strings.Join(out, "\n"), w, h)
}

// tableRow is one line of the table: a member's cells and ψ history, or
// a group's row (member -1) with what its members share and aggregates.
type tableRow struct {
	cells  []string
	member int
	hist   []float64
}

// tableRows are the table's lines in order: per group of members that
// differ only by seed, the group's row (if more than one) then each
// member's, whose configuration cells the group's row already says.
func (m *Model) tableRows(cols []column) []tableRow {
	st := m.st
	var rows []tableRow
	for _, g := range m.sorted() {
		if len(g) > 1 {
			ms := make([]sweep.MemberStatus, len(g))
			for i, x := range g {
				ms[i] = st.Members[x]
			}
			cells := make([]string, len(cols))
			for c, col := range cols {
				if col.agg != nil {
					cells[c] = col.agg(ms)
				}
			}
			rows = append(rows, tableRow{cells: cells, member: -1})
		}
		for _, i := range g {
			cells := make([]string, len(cols))
			for c, col := range cols {
				cells[c] = safetext.Line(col.cell(st.Members[i])) // values of the spec, states read from runs
				if len(g) > 1 && col.config {
					cells[c] = "" // said on the group's row
				}
			}
			rows = append(rows, tableRow{cells: cells, member: i, hist: st.Members[i].History})
		}
	}
	return rows
}

// scrollTo moves the table's first shown row so the selected member's
// row is among the n shown.
func (m *Model) scrollTo(rows []tableRow, n int) {
	selRow := 0
	for i, r := range rows {
		if r.member == m.sel {
			selRow = i
		}
	}
	if selRow < m.top {
		m.top = selRow
	}
	if selRow >= m.top+n {
		m.top = selRow - n + 1
	}
	m.top = max(0, min(m.top, len(rows)-n))
}

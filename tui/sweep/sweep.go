// Package sweep is the workbench's sweep view: one line per member of a
// sweep with its values, state, step, ψ now and best, and a sparkline of
// ψ over its refreshes. It reads nothing itself: Poll reads the sweep off
// the UI goroutine and sends StatusMsg. Enter picks the selected member;
// the caller opens (finished) or attaches to (live) its run.
package sweep

import (
	"context"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"selmix/core/safetext"
	"selmix/runs/sweep"
	"selmix/tui/internal/wait"
	"selmix/tui/pane"
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
	ctx    *pane.Context
	id     string
	st     *sweep.Status
	err    error
	note   string // a one-off message (e.g. "member 3 has no run yet")
	sel    int
	top    int // first member shown
	w, h   int
	chosen int
}

// New returns the view of sweep id.
func New(ctx *pane.Context, id string) *Model {
	return &Model{ctx: ctx, id: id, chosen: -1, w: 80, h: 24}
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
	case ErrMsg:
		m.err = msg.Err
	case tea.KeyPressMsg:
		return m, m.key(msg)
	}
	return m, nil
}

func (m *Model) key(kp tea.KeyPressMsg) tea.Cmd {
	k := m.ctx.Keys
	n := 0
	if m.st != nil {
		n = len(m.st.Members)
	}
	m.note = ""
	switch {
	case key.Matches(kp, k.Quit), key.Matches(kp, k.Cancel):
		return tea.Quit
	case key.Matches(kp, k.Up):
		m.sel--
	case key.Matches(kp, k.Down):
		m.sel++
	case key.Matches(kp, k.Top):
		m.sel = 0
	case key.Matches(kp, k.Bottom):
		m.sel = n - 1
	case key.Matches(kp, k.Accept):
		if n == 0 {
			return nil
		}
		if mem := m.st.Members[m.sel]; mem.RunID == "" {
			m.note = fmt.Sprintf("member %d has no run yet (%s)", mem.Index, mem.StateText())
			return nil
		}
		m.chosen = m.sel
		return tea.Quit
	}
	m.sel = max(0, min(m.sel, n-1))
	return nil
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
	help := th.Render(th.Dim, fmt.Sprintf("%s/%s select  %s open a finished run, attach to a live one  %s quit",
		k.Up.Help().Key, k.Down.Help().Key, k.Accept.Help().Key, k.Quit.Help().Key))
	frame := pane.Frame(th, "members", body, m.w, m.h-3, true)
	return pane.Fit(strings.Join([]string{head, frame, status, help}, "\n"), m.w, m.h)
}

// table is the member list in w columns and h lines (a header line, then
// as many members as fit, scrolled to keep the selection in view).
func (m *Model) table(w, h int) string {
	th := m.ctx.Theme
	st := m.st
	slurm := st.Slurm
	// Column widths from content.
	cols := []string{"#"}
	for _, c := range sweep.ShortNames(st.Columns) {
		cols = append(cols, safetext.Line(c))
	}
	cols = append(cols, "state")
	if slurm {
		cols = append(cols, "slurm")
	}
	cols = append(cols, "step", "ψ now", "best ψ")
	rows := make([][]string, len(st.Members))
	for i, mem := range st.Members {
		r := append([]string{fmt.Sprint(mem.Index)}, mem.ValueTexts()...)
		r = append(r, mem.StateText())
		if slurm {
			r = append(r, mem.SlurmText())
		}
		r = append(r, mem.StepText(), mem.PsiText(), mem.BestText())
		for c := range r { // values of the spec, states read from runs
			r[c] = safetext.Line(r[c])
		}
		rows[i] = r
	}
	widths := make([]int, len(cols))
	for c, name := range cols {
		widths[c] = pane.Width(name)
		for _, r := range rows {
			widths[c] = max(widths[c], pane.Width(r[c]))
		}
	}
	line := func(cells []string) string {
		var b strings.Builder
		for c, cell := range cells {
			if c > 0 {
				b.WriteString("  ")
			}
			if c >= len(cells)-3 || c == 0 { // numbers right-aligned
				b.WriteString(pane.PadLeft(cell, widths[c]))
			} else {
				b.WriteString(pane.PadRight(cell, widths[c]))
			}
		}
		return b.String()
	}
	fixed := 2 + pane.Width(line(cols)) + 2
	spark := max(0, w-fixed)
	out := []string{"  " + th.Render(th.Bold, line(cols)) + "  " + th.Render(th.Bold, pane.PadRight("ψ over refreshes", spark))}
	n := max(1, h-1)
	if m.sel < m.top {
		m.top = m.sel
	}
	if m.sel >= m.top+n {
		m.top = m.sel - n + 1
	}
	m.top = max(0, min(m.top, len(rows)-n))
	for i := m.top; i < len(rows) && i < m.top+n; i++ {
		mem := st.Members[i]
		mark := "  "
		if i == m.sel {
			mark = "▶ "
		}
		text := line(rows[i]) + "  " + pane.PadRight(pane.Sparkline(mem.History, spark), spark)
		switch {
		case i == m.sel && !th.Plain:
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
	return pane.Fit(strings.Join(out, "\n"), w, h)
}

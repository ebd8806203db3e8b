// Package sweep is the workbench's sweep view: the members of a sweep
// grouped by configuration (every column but seed), each group with the
// mean ± standard deviation over its seeds of ψ now and best ψ, and under
// it one line per member with its seed, state, step, ψ now and best, and
// a sparkline of ψ over its refreshes. Any column sorts the view. It reads
// nothing itself: Poll reads the sweep off the UI goroutine and sends
// StatusMsg. Enter picks the selected member; the caller opens (finished)
// or attaches to (live) its run. c picks every member that has a run, for
// the caller's comparison view, grouped by the sweep's first axis but
// seed.
package sweep

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"selmix/internal/safetext"
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
	compare bool // c: compare the members (Compared)
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

// keyCompare compares the members (tui/compare), as c does in the runs
// browser.
var keyCompare = key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "compare the members"))

// Compared is, after c, the runs of every member that has one, in the
// order shown, and the config key to group them by: the sweep's first
// axis that is not seed ("" when seed is its only axis).
func (m *Model) Compared() (runIDs []string, groupBy string, ok bool) {
	if !m.compare || m.st == nil {
		return nil, "", false
	}
	for _, i := range m.memberOrder() {
		if id := m.st.Members[i].RunID; id != "" {
			runIDs = append(runIDs, id)
		}
	}
	for _, c := range m.st.Columns {
		if c != sweep.SeedKey {
			groupBy = c
			break
		}
	}
	return runIDs, groupBy, true
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
	case key.Matches(kp, keyCompare):
		if m.st == nil || !slices.ContainsFunc(m.st.Members, func(ms sweep.MemberStatus) bool { return ms.RunID != "" }) {
			m.note = "no member has a run yet"
			return nil
		}
		m.compare = true
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
			{B: keyCompare, Desc: "compare the members' curves, grouped by the first axis"},
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
	help := th.Render(th.Dim, fmt.Sprintf("%s help  %s/%s select  %s open or attach  %s compare  %s/%s sort column  %s reverse  %s quit",
		k.Help.Help().Key, k.Up.Help().Key, k.Down.Help().Key, k.Accept.Help().Key, keyCompare.Help().Key, k.Left.Help().Key, k.Right.Help().Key, k.Sort.Help().Key, k.Quit.Help().Key))
	frame := style.Frame(th, "members by configuration", body, m.w, m.h-3, true)
	screen := style.Fit(strings.Join([]string{head, frame, status, help}, "\n"), m.w, m.h)
	return m.dialogs.Draw(screen, m.w, m.h)
}

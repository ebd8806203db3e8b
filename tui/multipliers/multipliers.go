// Package multipliers is the s and λ pane: the inverse temperature s with
// its history, and the objective's Lagrange multipliers (per class, or
// head and tail) as bars with their history as sparklines. Per-class
// multipliers sort and search like the classes pane (package classlist).
package multipliers

import (
	"fmt"
	"math"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"selmix/tui/classlist"
	"selmix/tui/pane"
	"selmix/tui/runstate"
	"selmix/tui/style"
)

// Model is the pane.
type Model struct {
	classlist.Pane

	// Derived from one refresh when it arrives (sync).
	perClass bool     // one multiplier per class: the rows sort and search
	names    []string // of the multipliers, in multiplier order
	nameW    int
	hi       float64 // largest multiplier
	order    []int   // multiplier shown at each row
	seq      []int   // multiplier order, when not per class
}

// New returns the pane over run.
func New(ctx *pane.Context, run *runstate.State) *Model {
	m := &Model{Pane: classlist.NewPane(ctx, run)}
	m.sync()
	return m
}

func (m *Model) SetSize(w, h int) { m.Base.SetSize(w, h); m.sync() }

func (m *Model) Title() string {
	if m.perClass && m.Nav.By() != classlist.ByClass {
		return "s and λ · " + m.Nav.Title()
	}
	return "s and λ"
}

func (m *Model) ShortHelp() []key.Binding {
	k := m.Ctx.Keys
	return m.Help([]key.Binding{k.SUp, k.Up, k.Down}, m.perClass)
}
func (m *Model) FullHelp() [][]key.Binding {
	k := m.Ctx.Keys
	return [][]key.Binding{{k.SUp, k.SDown, k.Up, k.Down}, classlist.KeyHelp(m.Ctx)}
}

func (m *Model) Update(msg tea.Msg) tea.Cmd {
	m.sync()
	if kp, ok := msg.(tea.KeyPressMsg); ok && m.Keys(kp, len(m.order), m.perClass) {
		m.order = m.rowOrder() // the Nav sorted anew
	}
	return nil
}

// sync derives what View needs from the current refresh, once per
// refresh (or when its G arrives: the gain order needs it).
func (m *Model) sync() {
	if !m.Sync() {
		return
	}
	r, cur := m.Run, m.RS
	m.names, m.order, m.perClass = m.names[:0], nil, false
	if cur == nil {
		return
	}
	lam := cur.Lambda
	// Two multipliers of a K≠2 run are the head and tail ones.
	headTail := len(lam) == 2 && cur.K != 2
	m.perClass = len(lam) == cur.K && !headTail
	if m.perClass {
		m.Nav.Refresh(cur, r)
	}
	m.nameW, m.hi = 4, 0
	for i := range lam {
		n := r.ClassName(i)
		if headTail {
			n = []string{"head", "tail"}[i]
		}
		m.names = append(m.names, n)
		m.nameW = max(m.nameW, min(12, len([]rune(n))))
		m.hi = math.Max(m.hi, lam[i])
	}
	m.order = m.rowOrder()
}

// rowOrder is the multiplier at each row: the Nav's order per class,
// else multiplier order.
func (m *Model) rowOrder() []int {
	if m.perClass {
		return m.Nav.Order
	}
	m.seq = m.seq[:0]
	for i := range m.names {
		m.seq = append(m.seq, i)
	}
	return m.seq
}

func (m *Model) View() string {
	th := m.Ctx.Theme
	r := m.Run
	if m.RS == nil {
		return m.Waiting()
	}
	var b strings.Builder
	sparkW := max(4, min(40, m.W/3))
	sNow := r.Latest.Hyper.S
	fmt.Fprintf(&b, "s = %s  %s  %s", th.Render(th.Accent, style.Trimmed(sNow)),
		th.Render(th.Accent, style.Sparkline(r.S, sparkW)), th.Render(th.Dim, fmt.Sprintf("(%s to scale)", m.Ctx.Keys.SUp.Help().Key)))
	lam := m.RS.Lambda
	obj := r.Latest.Hyper.Objective
	b.WriteByte('\n')
	if len(lam) == 0 {
		b.WriteString(th.Render(th.Dim, fmt.Sprintf("%s has no Lagrange multipliers", obj)))
		return style.Fit(b.String(), m.W, m.H)
	}
	hi := m.hi
	scaleNote := fmt.Sprintf("bars 0–%s", style.Trimmed(hi))
	if hi == 0 {
		hi = 1
		scaleNote = "all zero"
	}
	first, end := m.Scroll.Window(len(m.order), m.Rows())
	if m.Nav.Searching() {
		b.WriteString(m.Nav.Prompt(m.Ctx))
	} else {
		head := fmt.Sprintf("λ of %s (%s); history →", obj, scaleNote)
		if first > 0 || end < len(m.order) {
			// Rows that do not fit are said, not silently cut.
			head += fmt.Sprintf("   rows %d–%d of %d ↕", first+1, end, len(m.order))
		}
		b.WriteString(th.Render(th.Dim, head))
	}
	nameW := m.nameW
	barW := max(4, m.W-nameW-1-9-1-sparkW)
	for _, i := range m.order[first:end] {
		b.WriteByte('\n')
		name := style.PadRight(runstate.Short(m.names[i], nameW), nameW)
		if m.perClass && i == m.Nav.Found {
			name = th.Render(th.Accent, style.PadRight("»"+runstate.Short(m.names[i], nameW-1), nameW))
		}
		b.WriteString(name + " ")
		b.WriteString(th.Render(th.Accent, style.Bar(lam[i]/hi, barW)))
		fmt.Fprintf(&b, " %8.3g ", lam[i])
		b.WriteString(th.Render(th.Dim, style.Sparkline(r.LambdaHistory(i, len(lam)), sparkW)))
	}
	return style.Fit(b.String(), m.W, m.H)
}

// Package multipliers is the s and λ pane: the inverse temperature s with
// its history, and the objective's Lagrange multipliers (per class, or
// head and tail) as bars with their history as sparklines.
package multipliers

import (
	"fmt"
	"math"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"selmix/tui/history"
	"selmix/tui/pane"
)

// Model is the pane.
type Model struct {
	ctx    *pane.Context
	run    *history.Run
	w, h   int
	offset int
}

// New returns the pane over run.
func New(ctx *pane.Context, run *history.Run) *Model { return &Model{ctx: ctx, run: run} }

func (m *Model) SetSize(w, h int) { m.w, m.h = w, h }
func (m *Model) Title() string    { return "s and λ" }
func (m *Model) ShortHelp() []key.Binding {
	k := m.ctx.Keys
	return []key.Binding{k.SUp, k.Up, k.Down}
}
func (m *Model) FullHelp() [][]key.Binding {
	k := m.ctx.Keys
	return [][]key.Binding{{k.SUp, k.SDown, k.Up, k.Down}}
}

func (m *Model) Update(msg tea.Msg) tea.Cmd {
	kp, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return nil
	}
	switch k := m.ctx.Keys; {
	case key.Matches(kp, k.Up):
		m.offset--
	case key.Matches(kp, k.Down):
		m.offset++
	case key.Matches(kp, k.Top):
		m.offset = 0
	}
	m.offset = m.clamped()
	return nil
}

// rows is how many multipliers fit under the s line and the λ title.
func (m *Model) rows() int { return max(0, m.h-2) }

// clamped is offset kept within the current multipliers; View uses it
// without writing it back (a new refresh may change their number).
func (m *Model) clamped() int {
	n := 0
	if m.run.Cur != nil {
		n = len(m.run.Cur.Lambda)
	}
	return max(0, min(m.offset, n-m.rows()))
}

func (m *Model) View() string {
	th := m.ctx.Theme
	r := m.run
	if r.Cur == nil {
		return pane.Fit(th.Render(th.Dim, "waiting for the first evaluation…"), m.w, m.h)
	}
	var b strings.Builder
	sparkW := max(4, min(40, m.w/3))
	sNow := r.Latest.Hyper.S
	fmt.Fprintf(&b, "s = %s  %s  %s", th.Render(th.Accent, trim(sNow)),
		th.Render(th.Accent, pane.Sparkline(r.S, sparkW)), th.Render(th.Dim, fmt.Sprintf("(%s to scale)", m.ctx.Keys.SUp.Help().Key)))
	lam := r.Cur.Lambda
	obj := r.Latest.Hyper.Objective
	b.WriteByte('\n')
	if len(lam) == 0 {
		b.WriteString(th.Render(th.Dim, fmt.Sprintf("%s has no Lagrange multipliers", obj)))
		return pane.Fit(b.String(), m.w, m.h)
	}
	names := make([]string, len(lam))
	for i := range lam {
		switch {
		case len(lam) == 2 && r.K() != 2:
			names[i] = []string{"head", "tail"}[i]
		default:
			names[i] = r.ClassName(i)
		}
	}
	hi := 0.0
	for _, v := range lam {
		hi = math.Max(hi, v)
	}
	scaleNote := fmt.Sprintf("bars 0–%s", trim(hi))
	if hi == 0 {
		hi = 1
		scaleNote = "all zero"
	}
	b.WriteString(th.Render(th.Dim, fmt.Sprintf("λ of %s (%s); history →", obj, scaleNote)))
	rows, off := m.rows(), m.clamped()
	nameW := 4
	for _, n := range names {
		nameW = max(nameW, min(12, len([]rune(n))))
	}
	barW := max(4, m.w-nameW-1-9-1-sparkW)
	for i := off; i < min(len(lam), off+rows); i++ {
		b.WriteByte('\n')
		b.WriteString(pane.PadRight(history.Short(names[i], nameW), nameW) + " ")
		b.WriteString(th.Render(th.Accent, pane.Bar(lam[i]/hi, barW)))
		fmt.Fprintf(&b, " %8.3g ", lam[i])
		b.WriteString(th.Render(th.Dim, pane.Sparkline(r.LambdaHistory(i, len(lam)), sparkW)))
	}
	return pane.Fit(b.String(), m.w, m.h)
}

func trim(x float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", x), "0"), ".")
}

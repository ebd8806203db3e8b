// Package eventlog is the event-log pane: controls and their acks,
// refreshes, warnings and errors, newest at the bottom. It follows the
// tail unless the user scrolls up.
package eventlog

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"selmix/tui/history"
	"selmix/tui/pane"
)

// Model is the pane.
type Model struct {
	ctx  *pane.Context
	run  *history.Run
	w, h int
	back int // lines scrolled back from the tail; 0 follows
}

// New returns the pane over run.
func New(ctx *pane.Context, run *history.Run) *Model { return &Model{ctx: ctx, run: run} }

func (m *Model) SetSize(w, h int) { m.w, m.h = w, h }
func (m *Model) Title() string {
	if m.back > 0 {
		return fmt.Sprintf("events (%d newer below, %s to follow)", m.back, m.ctx.Keys.Bottom.Help().Key)
	}
	return "events"
}
func (m *Model) ShortHelp() []key.Binding {
	k := m.ctx.Keys
	return []key.Binding{k.Up, k.Down, k.Bottom}
}
func (m *Model) FullHelp() [][]key.Binding {
	k := m.ctx.Keys
	return [][]key.Binding{{k.Up, k.Down, k.Top, k.Bottom}}
}

func (m *Model) Update(msg tea.Msg) tea.Cmd {
	kp, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return nil
	}
	n := len(m.run.Log)
	switch k := m.ctx.Keys; {
	case key.Matches(kp, k.Up):
		m.back++
	case key.Matches(kp, k.Down):
		m.back--
	case key.Matches(kp, k.Top):
		m.back = n
	case key.Matches(kp, k.Bottom):
		m.back = 0
	}
	m.back = max(0, min(m.back, n-m.h))
	return nil
}

func (m *Model) View() string {
	th := m.ctx.Theme
	log := m.run.Log
	if len(log) == 0 {
		return pane.Fit(th.Render(th.Dim, "no events yet"), m.w, m.h)
	}
	end := max(0, len(log)-m.back)
	start := max(0, end-m.h)
	var b strings.Builder
	for i, e := range log[start:end] {
		if i > 0 {
			b.WriteByte('\n')
		}
		st := th.Dim
		switch e.Level {
		case history.Note:
			st = th.Bold
		case history.Warn:
			st = th.Warn
		case history.Error:
			st = th.Bad
		}
		b.WriteString(th.Render(th.Dim, fmt.Sprintf("%6d  ", e.Step)) + th.Render(st, e.Text))
	}
	return pane.Fit(b.String(), m.w, m.h)
}

package pane

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"selmix/tui/keys"
	"selmix/tui/runstate"
	"selmix/tui/style"
)

// Base is what every pane embeds: the shared context, the run it draws
// and the content size the root gave it (soft-serve's common.Common).
// A pane that must react to a resize wraps SetSize.
type Base struct {
	Ctx  *Context
	Run  *runstate.State
	W, H int
}

// NewBase returns the Base of a pane over run.
func NewBase(ctx *Context, run *runstate.State) Base { return Base{Ctx: ctx, Run: run} }

// SetSize records the pane's content area.
func (b *Base) SetSize(w, h int) { b.W, b.H = w, h }

// Waiting is the view of a pane before the first evaluation.
func (b *Base) Waiting() string {
	th := b.Ctx.Theme
	return style.Fit(th.Render(th.Dim, "waiting for the first evaluation…"), b.W, b.H)
}

// Scroll is a window of rows lines over n lines, the vertical half of
// bubbles' viewport without its content: the pane keeps the lines and
// passes their number, which may change with every refresh, so the
// offset is stored as asked and clamped when read. View only reads it.
type Scroll struct {
	off  int
	tail bool // follow the last line (NewTail)
	// pinned: a tail scroll the user moved off the last line stays where
	// it was left while lines are added below.
	pinned bool
}

// NewTail returns a Scroll that keeps the window on the last line while
// it is there, like an event log's tail.
func NewTail() Scroll { return Scroll{tail: true} }

// Offset is the first visible line.
func (s *Scroll) Offset(n, rows int) int {
	end := max(0, n-rows)
	if s.tail && !s.pinned {
		return end
	}
	return max(0, min(s.off, end))
}

// Fixed reports whether the window stays at its offset as lines come
// and go (a tail scroll following the last line does not).
func (s *Scroll) Fixed() bool { return !s.tail || s.pinned }

// Window is the visible lines [lo, hi).
func (s *Scroll) Window(n, rows int) (lo, hi int) {
	lo = s.Offset(n, rows)
	return lo, min(n, lo+max(0, rows))
}

// SetOffset moves the window to start at line o (clamped).
func (s *Scroll) SetOffset(o, n, rows int) {
	end := max(0, n-rows)
	s.off = max(0, min(o, end))
	s.pinned = s.off < end
}

// ScrollBy moves the window d lines down (up when d < 0).
func (s *Scroll) ScrollBy(d, n, rows int) { s.SetOffset(s.Offset(n, rows)+d, n, rows) }

// GotoTop and GotoBottom move to either end.
func (s *Scroll) GotoTop(n, rows int)    { s.SetOffset(0, n, rows) }
func (s *Scroll) GotoBottom(n, rows int) { s.SetOffset(n, n, rows) }

// EnsureVisible scrolls as little as needed to show line i.
func (s *Scroll) EnsureVisible(i, n, rows int) {
	lo, hi := s.Window(n, rows)
	switch {
	case i < lo:
		s.SetOffset(i, n, rows)
	case i >= hi:
		s.SetOffset(i-rows+1, n, rows)
	}
}

// Update handles the vertical scroll keys (up, down, top, bottom) and
// reports whether kp was one of them.
func (s *Scroll) Update(kp tea.KeyPressMsg, k *keys.Map, n, rows int) bool {
	switch {
	case key.Matches(kp, k.Up):
		s.ScrollBy(-1, n, rows)
	case key.Matches(kp, k.Down):
		s.ScrollBy(1, n, rows)
	case key.Matches(kp, k.Top):
		s.GotoTop(n, rows)
	case key.Matches(kp, k.Bottom):
		s.GotoBottom(n, rows)
	default:
		return false
	}
	return true
}

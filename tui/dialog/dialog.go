// Package dialog holds the workbench's dialogs (quit, error, help, picker,
// form) as components and the overlay stack that shows them over the
// panes. A dialog only reads keys and says what it wants done through the
// Action its Update returns; the owner does it (sends controls, quits,
// forks), so dialogs stay dumb and testable on their own.
package dialog

import (
	"strings"

	tea "charm.land/bubbletea/v2"

	"selmix/tui/pane"
	"selmix/tui/style"
)

// Dialog is one overlay: it takes every key while it is on top.
type Dialog interface {
	// ID names the dialog kind ("quit", "help", …): at most one of each
	// is on the stack.
	ID() string
	// Title is drawn in the dialog's frame.
	Title() string
	// Update handles a key and returns what the owner should do; nil
	// keeps the dialog open and asks nothing.
	Update(kp tea.KeyPressMsg) Action
	// View is the dialog's body for a screen of w×h; the stack frames it.
	View(w, h int) string
}

// Action is what a dialog asks of its owner after a key. Every action but
// nil closes the dialog that returned it.
type Action interface{ action() }

// Close closes the dialog and does nothing else.
type Close struct{}

// Quit leaves the workbench; Detach leaves an attached run going.
type Quit struct{ Detach bool }

// Submit closes a picker or form with what it chose: Values holds the
// changed fields, key → value, in the form's order.
type Submit struct {
	ID     string
	Values []KV
}

// KV is one changed field of a Submit.
type KV struct{ Key, Value string }

func (Close) action()  {}
func (Quit) action()   {}
func (Submit) action() {}

// Stack is the overlay stack: the last dialog pushed is on top, takes the
// keys and is drawn last.
type Stack struct {
	ctx *pane.Context
	ds  []Dialog
}

// NewStack returns an empty stack that draws with ctx's theme.
func NewStack(ctx *pane.Context) *Stack { return &Stack{ctx: ctx} }

// Len is the number of open dialogs.
func (s *Stack) Len() int { return len(s.ds) }

// Top is the dialog on top, or nil.
func (s *Stack) Top() Dialog {
	if len(s.ds) == 0 {
		return nil
	}
	return s.ds[len(s.ds)-1]
}

// Has reports whether a dialog of kind id is open.
func (s *Stack) Has(id string) bool {
	for _, d := range s.ds {
		if d.ID() == id {
			return true
		}
	}
	return false
}

// Push opens d on top; an open dialog of the same kind is replaced.
func (s *Stack) Push(d Dialog) {
	s.Remove(d.ID())
	s.ds = append(s.ds, d)
}

// Remove closes the dialog of kind id, wherever it is.
func (s *Stack) Remove(id string) {
	for i, d := range s.ds {
		if d.ID() == id {
			s.ds = append(s.ds[:i], s.ds[i+1:]...)
			return
		}
	}
}

// Update sends a key to the top dialog; any action closes it. The action
// is returned for the owner to carry out.
func (s *Stack) Update(kp tea.KeyPressMsg) Action {
	top := s.Top()
	if top == nil {
		return nil
	}
	a := top.Update(kp)
	if a != nil {
		s.Remove(top.ID())
	}
	return a
}

// Draw draws every open dialog, framed and centred, over screen (w×h).
func (s *Stack) Draw(screen string, w, h int) string {
	for _, d := range s.ds {
		screen = style.Overlay(screen, Box(s.ctx.Theme, d.Title(), d.View(w, h), w, h), w)
	}
	return screen
}

// Box frames body under title, as small as the body allows and no larger
// than w×h.
func Box(th *style.Theme, title, body string, w, h int) string {
	bw := 0
	for _, l := range strings.Split(body, "\n") {
		bw = max(bw, style.Width(l))
	}
	bw = min(bw+4, w)
	bh := min(strings.Count(body, "\n")+3, h)
	return style.Frame(th, title, body, bw, bh, true)
}

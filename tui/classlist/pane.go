package classlist

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"selmix/core/loop"
	"selmix/tui/pane"
	"selmix/tui/runstate"
)

// Pane is what the panes listing classes (classes, λ) embed: the pane
// Base, the refresh they show, a scroll over the rows under their two
// header lines, and the Nav that sorts and searches the rows.
type Pane struct {
	pane.Base
	Scroll pane.Scroll
	Nav    Nav

	// RS is the refresh the pane shows, the run's current one as of the
	// last Sync.
	RS   *loop.Refresh
	hasG bool
}

// NewPane returns the Pane of a list over run.
func NewPane(ctx *pane.Context, run *runstate.State) Pane {
	return Pane{Base: pane.NewBase(ctx, run), Nav: NewNav()}
}

// Sync moves RS to the run's current refresh and reports whether it
// changed, or its G arrived (the order by gain needs it): a pane derives
// what View needs only then.
func (p *Pane) Sync() bool {
	cur := p.Run.Cur
	if cur == p.RS && (cur == nil || (cur.G != nil) == p.hasG) {
		return false
	}
	p.RS, p.hasG = cur, cur != nil && cur.G != nil
	return true
}

// Rows is how many rows fit under the two header lines.
func (p *Pane) Rows() int { return max(0, p.H-2) }

// Capturing reports that the search prompt is open.
func (p *Pane) Capturing() bool { return p.Nav.Searching() }

// Keys handles a key press over n rows: the Nav's sort and search keys
// when sorted (the rows are classes), else or then the scroll keys. It
// reports whether the Nav took kp (its Order may have changed).
func (p *Pane) Keys(kp tea.KeyPressMsg, n int, sorted bool) bool {
	if sorted {
		if handled, jump := p.Nav.Update(kp, p.Ctx); handled {
			if jump >= 0 {
				p.Scroll.SetOffset(jump, n, p.Rows())
			}
			return true
		}
	}
	p.Scroll.Update(kp, p.Ctx.Keys, n, p.Rows())
	return false
}

// Help is the short help: the prompt's while it is open, else keys and, when
// sorted, the sort and search keys.
func (p *Pane) Help(keys []key.Binding, sorted bool) []key.Binding {
	switch {
	case p.Nav.Searching():
		return PromptHelp(p.Ctx)
	case sorted:
		return append(keys, KeyHelp(p.Ctx)...)
	}
	return keys
}

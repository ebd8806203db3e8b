// Package pane is the scaffolding every workbench pane shares: the
// Component interface, the Context (theme and key map) passed to each
// pane, the Base a pane embeds and the Scroll state of a list. How a pane
// looks (theme, glyphs, text layout) is package style.
package pane

import (
	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"

	"selmix/tui/keys"
	"selmix/tui/style"
)

// Component is one pane. The root model sizes it, routes key messages to
// it while it has focus, and asks for its View; View must be cheap and do
// no I/O.
type Component interface {
	// SetSize gives the pane its content area (inside the frame).
	SetSize(w, h int)
	Update(msg tea.Msg) tea.Cmd
	View() string
	// Title names the pane in its frame; it may carry a short status.
	Title() string
	help.KeyMap
}

// RefreshMsg tells every pane that the run's current refresh changed,
// or its G and P arrived: what a pane derives from it (sort orders,
// aggregates) is recomputed then, in Update, never in View.
type RefreshMsg struct{}

// Capturer is a pane that is reading text (a search prompt): while
// Capturing, every key goes to it before the global bindings.
type Capturer interface {
	Capturing() bool
}

// Context is what panes share: styles and key bindings. It is built once
// and passed by pointer, never kept in globals.
type Context struct {
	Theme *style.Theme
	Keys  *keys.Map
}

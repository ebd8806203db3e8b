package dialog

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"selmix/tui/pane"
)

// ErrorID is the error dialog's ID.
const ErrorID = "error"

// ErrorDialog shows the error that ended a run: esc or enter closes it
// (the panes stay readable), the quit key leaves.
type ErrorDialog struct {
	ctx *pane.Context
	msg string
}

// NewError returns the error dialog for msg.
func NewError(ctx *pane.Context, msg string) *ErrorDialog { return &ErrorDialog{ctx: ctx, msg: msg} }

func (d *ErrorDialog) ID() string    { return ErrorID }
func (d *ErrorDialog) Title() string { return "error" }

func (d *ErrorDialog) Update(kp tea.KeyPressMsg) Action {
	k := d.ctx.Keys
	switch {
	case key.Matches(kp, k.Quit):
		return Quit{}
	case key.Matches(kp, k.Cancel, k.Accept):
		return Close{}
	}
	return nil
}

func (d *ErrorDialog) View(w, h int) string {
	th, k := d.ctx.Theme, d.ctx.Keys
	return th.Render(th.Bad, Wrap(d.msg, min(70, w-6))) + "\n\n" +
		fmt.Sprintf("%s close    %s quit", k.Cancel.Help().Key, k.Quit.Help().Key)
}

// Wrap breaks s into lines of at most w runes at spaces (a word longer
// than w stands alone); w < 10 leaves s as it is.
func Wrap(s string, w int) string {
	if w < 10 {
		return s
	}
	var out []string
	for _, para := range strings.Split(s, "\n") {
		line := ""
		for _, word := range strings.Fields(para) {
			if line != "" && len([]rune(line))+1+len([]rune(word)) > w {
				out = append(out, line)
				line = ""
			}
			if line != "" {
				line += " "
			}
			line += word
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

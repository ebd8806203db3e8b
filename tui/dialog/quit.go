package dialog

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"selmix/tui/pane"
)

// QuitID is the quit dialog's ID.
const QuitID = "quit"

// QuitDialog asks before the workbench stops a live run: y stops it, d
// detaches (a run in its own process), n/esc keeps watching, a second
// ctrl+c leaves at once.
type QuitDialog struct {
	ctx      *pane.Context
	attached bool
	dir      string
}

// NewQuit returns the quit dialog; attached offers detach, dir (if set)
// says where the run stays recorded.
func NewQuit(ctx *pane.Context, attached bool, dir string) *QuitDialog {
	return &QuitDialog{ctx: ctx, attached: attached, dir: dir}
}

func (d *QuitDialog) ID() string    { return QuitID }
func (d *QuitDialog) Title() string { return "quit" }

func (d *QuitDialog) Update(kp tea.KeyPressMsg) Action {
	switch kp.String() {
	case "y", "enter":
		return Quit{}
	case "d":
		if d.attached {
			return Quit{Detach: true}
		}
	case "n", "esc":
		return Close{}
	}
	if key.Matches(kp, d.ctx.Keys.Quit) && kp.String() == "ctrl+c" {
		// A second ctrl+c leaves at once; an attached run is left going.
		return Quit{Detach: d.attached}
	}
	return nil
}

func (d *QuitDialog) View(w, h int) string {
	th := d.ctx.Theme
	body := "Quit stops the run."
	if d.attached {
		body = "The run lives in its own process: detach to leave it\ngoing (selmix attach comes back), or stop it."
	}
	if d.dir != "" {
		body += "\nIt stays recorded in " + d.dir + "."
	}
	body += "\n\n"
	if d.attached {
		body += th.Render(th.Bold, "d") + " detach    "
	}
	return body + th.Render(th.Bold, "y") + " stop the run and quit    " + th.Render(th.Bold, "n/esc") + " keep watching"
}

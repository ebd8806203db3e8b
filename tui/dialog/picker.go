package dialog

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"selmix/tui/pane"
	"selmix/tui/style"
)

// Picker chooses one value of a setting from a list. Enter submits the
// value under the cursor (Close if it is the current one); esc or the
// quit key cancels.
type Picker struct {
	ctx       *pane.Context
	id, title string
	key       string
	options   []string
	descs     []string // one line per option, or nil
	current   string
	cursor    int
	note      string // lines under the options (the what-if preview)
}

// NewPicker returns a picker of key among options, with the cursor on the
// current value. Its ID is "picker:"+key.
func NewPicker(ctx *pane.Context, title, key string, options []string, current string) *Picker {
	p := &Picker{ctx: ctx, id: "picker:" + key, title: title, key: key, options: options, current: current}
	for i, o := range options {
		if o == current {
			p.cursor = i
		}
	}
	return p
}

// Describe gives each option a one-line description, shown beside it
// (descs[i] for options[i]).
func (p *Picker) Describe(descs []string) *Picker {
	p.descs = descs
	return p
}

// Selected is the option under the cursor ("" if there are none).
func (p *Picker) Selected() string {
	if len(p.options) == 0 {
		return ""
	}
	return p.options[p.cursor]
}

// Key is the setting the picker chooses.
func (p *Picker) Key() string { return p.key }

// SetNote shows text (lines) under the options, dimmed; "" shows none.
func (p *Picker) SetNote(text string) { p.note = text }

func (p *Picker) ID() string    { return p.id }
func (p *Picker) Title() string { return p.title }

func (p *Picker) Update(kp tea.KeyPressMsg) Action {
	k := p.ctx.Keys
	switch {
	case len(p.options) == 0:
		return Close{}
	case key.Matches(kp, k.Up):
		p.cursor = (p.cursor + len(p.options) - 1) % len(p.options)
	case key.Matches(kp, k.Down):
		p.cursor = (p.cursor + 1) % len(p.options)
	case key.Matches(kp, k.Accept):
		v := p.options[p.cursor]
		if v == p.current {
			return Close{}
		}
		return Submit{ID: p.id, Values: []KV{{p.key, v}}}
	case key.Matches(kp, k.Cancel, k.Quit):
		return Close{}
	}
	return nil
}

func (p *Picker) View(w, h int) string {
	th := p.ctx.Theme
	var b strings.Builder
	for i, o := range p.options {
		mark := "  "
		if o == p.current {
			mark = "● "
		}
		line := " " + mark + o
		if i == p.cursor {
			line = "▸" + mark + o
			line = th.Render(th.Selected, style.PadRight(line, 24))
		}
		if i < len(p.descs) && p.descs[i] != "" {
			if i != p.cursor {
				line = style.PadRight(line, 24)
			}
			d := p.descs[i]
			if room := max(0, w-29); style.Width(d) > room { // the box's border and margins take 4
				d = style.PadRight(d, room)
			}
			line += " " + th.Render(th.Dim, d)
		}
		b.WriteString(line + "\n")
	}
	b.WriteString(noteLines(th, p.note, w))
	b.WriteString("\n" + th.Render(th.Dim, "↑/↓ choose · enter apply · esc cancel · ● current"))
	return b.String()
}

package dialog

import (
	"fmt"
	"strings"
	"unicode"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"selmix/tui/pane"
	"selmix/tui/style"
)

// Field is one line of a form.
type Field struct {
	Key, Label, Doc string
	Value           string // the value it opens with
	// Base, if set, is what a change is measured against instead of
	// Value: a field that opens with a proposal (Value ≠ Base) hands it
	// on unless edited back.
	Base string
	// Text admits any printable character (names); otherwise only what a
	// number needs.
	Text bool
}

// Form edits several settings at once. Enter hands the changed fields to
// Check; any error it returns stays on screen beside its field and keeps
// the form open, so the owner only ever receives values it accepts. Esc
// cancels.
type Form struct {
	ctx       *pane.Context
	id, title string
	hint      string
	fields    []Field
	values    []string
	errs      []string
	cursor    int
	check     func([]KV) map[string]string
	note      string // lines under the fields (the what-if preview)
}

// NewForm returns a form of fields. check gets the changed fields in
// order and returns an error text per bad key (nil: all good); hint is
// the last line's description of enter (e.g. "enter applies all
// changes").
func NewForm(ctx *pane.Context, id, title, hint string, fields []Field, check func([]KV) map[string]string) *Form {
	f := &Form{ctx: ctx, id: id, title: title, hint: hint, fields: fields, check: check,
		values: make([]string, len(fields)), errs: make([]string, len(fields))}
	for i, fl := range fields {
		f.values[i] = fl.Value
	}
	return f
}

func (f *Form) ID() string    { return f.id }
func (f *Form) Title() string { return f.title }

// Values are the form's current texts, in field order.
func (f *Form) Values() []string { return append([]string(nil), f.values...) }

func (f *Form) Update(kp tea.KeyPressMsg) Action {
	k := f.ctx.Keys
	s := kp.String()
	switch {
	case s == "esc" || key.Matches(kp, k.Cancel):
		return Close{}
	case s == "enter" || key.Matches(kp, k.Accept):
		return f.submit()
	case s == "up" || s == "shift+tab":
		f.cursor = (f.cursor + len(f.values) - 1) % len(f.values)
	case s == "down" || s == "tab":
		f.cursor = (f.cursor + 1) % len(f.values)
	case s == "backspace":
		if v := []rune(f.values[f.cursor]); len(v) > 0 {
			f.values[f.cursor] = string(v[:len(v)-1])
		}
		f.errs[f.cursor] = ""
	case s == "ctrl+u":
		f.values[f.cursor] = ""
		f.errs[f.cursor] = ""
	default:
		if t := kp.Key().Text; t != "" && f.admits(t) {
			f.values[f.cursor] += t
			f.errs[f.cursor] = ""
		}
	}
	return nil
}

// admits reports whether typed text t may go into the current field.
func (f *Form) admits(t string) bool {
	if !f.fields[f.cursor].Text {
		return strings.Trim(t, "0123456789.eE+-") == ""
	}
	for _, r := range t {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

// SetNote shows text (lines) under the fields, dimmed; "" shows none.
func (f *Form) SetNote(text string) { f.note = text }

// Changed is the fields whose text differs from what they are measured
// against, in order, as Submit would hand them on (unchecked).
func (f *Form) Changed() []KV {
	var changed []KV
	for i, fl := range f.fields {
		base := fl.Value
		if fl.Base != "" {
			base = fl.Base
		}
		if v := strings.TrimSpace(f.values[i]); v != base {
			changed = append(changed, KV{fl.Key, v})
		}
	}
	return changed
}

func (f *Form) submit() Action {
	for i := range f.errs {
		f.errs[i] = ""
	}
	changed := f.Changed()
	errs := map[string]string{}
	if f.check != nil {
		errs = f.check(changed)
	}
	if len(errs) > 0 {
		for i, fl := range f.fields {
			f.errs[i] = errs[fl.Key]
		}
		return nil
	}
	return Submit{ID: f.id, Values: changed}
}

func (f *Form) View(w, h int) string {
	th := f.ctx.Theme
	lw, vw := 8, 14
	for _, fl := range f.fields {
		lw = max(lw, len([]rune(fl.Label)))
		vw = max(vw, len([]rune(fl.Value))+2)
	}
	var b strings.Builder
	for i, fl := range f.fields {
		v := f.values[i]
		cur := "  "
		if i == f.cursor {
			cur = "▸ "
			v += "▏"
		}
		line := fmt.Sprintf("%s%-*s %-*s %s", cur, lw, fl.Label, vw, v, th.Render(th.Dim, fl.Doc))
		if f.values[i] != fl.Value && fl.Value != "" {
			line += th.Render(th.Warn, "  (was "+fl.Value+")")
		}
		b.WriteString(line + "\n")
		if f.errs[i] != "" {
			// Wrapped to the screen: the refusal often lists the choices.
			pad := strings.Repeat(" ", lw+3)
			for n, l := range strings.Split(Wrap(f.errs[i], w-len(pad)-8), "\n") {
				mark := "  "
				if n == 0 {
					mark = "✗ "
				}
				b.WriteString(pad + th.Render(th.Bad, mark+l) + "\n")
			}
		}
	}
	b.WriteString(noteLines(th, f.note, w))
	b.WriteString("\n" + th.Render(th.Dim, "↑/↓ field · type to edit · ctrl+u clear\n"+f.hint+" · esc cancels"))
	return b.String()
}

// noteLines is a dialog's note, wrapped to a screen w wide, after a blank
// line; "" for none.
func noteLines(th *style.Theme, note string, w int) string {
	if note == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n")
	for _, para := range strings.Split(note, "\n") {
		for _, l := range strings.Split(Wrap(para, max(20, w-8)), "\n") {
			b.WriteString(th.Render(th.Dim, l) + "\n")
		}
	}
	return b.String()
}

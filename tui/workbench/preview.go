package workbench

import (
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"selmix/core/loop"
	"selmix/tui/dialog"
	"selmix/tui/whatif"
)

// The what-if preview's glue: which open dialog asks what, and where the
// answer goes (tui/whatif computes and words it).

// flashFor is how long the footer shows the forecast of an s± press.
const flashFor = 4 * time.Second

// noter is a dialog that shows a note: the edit form and the pickers.
type noter interface{ SetNote(string) }

// flashEndMsg clears the footer's forecast it was armed for.
type flashEndMsg struct{ seq int }

// basis is the last refresh's statistics, nil before one arrived (or
// from an attached run that did not send them).
func (m *Model) basis() *loop.Basis {
	if m.run.Cur == nil {
		return nil
	}
	return m.run.Cur.Basis
}

// candidate is the setting the top dialog proposes; ok is false when the
// top dialog proposes none (not the edit form or a control's picker).
func (m *Model) candidate() (next loop.Hyper, ok bool, err error) {
	next = m.run.Latest.Hyper
	switch d := m.dialogs.Top().(type) {
	case *dialog.Form:
		if d.ID() != editID {
			return next, false, nil
		}
		for _, kv := range d.Changed() {
			if err := next.Set(kv.Key, kv.Value); err != nil {
				return next, true, err
			}
		}
	case *dialog.Picker:
		if d.Key() != "objective" && d.Key() != "policy" {
			return next, false, nil
		}
		if err := next.Set(d.Key(), d.Selected()); err != nil {
			return next, true, err
		}
	default:
		return next, false, nil
	}
	return next, true, nil
}

// askPreview asks for the forecast of what the top dialog proposes,
// after delay (the debounce while typing).
func (m *Model) askPreview(delay time.Duration) tea.Cmd {
	if m.ended() {
		return nil
	}
	next, ok, err := m.candidate()
	switch {
	case !ok:
		return nil
	case err != nil:
		m.preview.Reset()
		m.note("no forecast: " + err.Error())
		return nil
	}
	m.flashing = false
	return m.preview.Ask(whatif.Question{Basis: m.basis(), Cur: m.run.Latest.Hyper, Next: next, At: m.run.Latest.Step}, delay)
}

// askFlash asks for the forecast of s = next, for the footer.
func (m *Model) askFlash(next float64) tea.Cmd {
	cur := m.run.Latest.Hyper
	h := cur
	h.S = next
	m.flashing = true
	return m.preview.Ask(whatif.Question{Basis: m.basis(), Cur: cur, Next: h, At: m.run.Latest.Step}, 0)
}

// previewUpdate takes the preview's messages; handled is false for
// others.
func (m *Model) previewUpdate(msg tea.Msg) (tea.Cmd, bool) {
	if msg, ok := msg.(flashEndMsg); ok {
		if msg.seq == m.flashSeq {
			m.flash = ""
		}
		return nil, true
	}
	cmd, changed := m.preview.Update(msg)
	if !changed {
		return cmd, cmd != nil
	}
	if m.flashing {
		m.flashing = false
		m.flash = m.preview.Text()
		m.flashSeq++
		seq := m.flashSeq
		return tea.Tick(flashFor, func(time.Time) tea.Msg { return flashEndMsg{seq} }), true
	}
	m.note(m.preview.Text())
	return nil, true
}

// note shows text and the linear model's track record in the top dialog,
// if it is one that asks for forecasts (an answer may come after its
// dialog closed and another, the fork form, opened).
func (m *Model) note(text string) {
	if _, asks, _ := m.candidate(); !asks {
		return
	}
	if d, ok := m.dialogs.Top().(noter); ok {
		right, of := m.run.TrackRecord(whatif.Window)
		d.SetNote(fmt.Sprintf("%s\n%s", text, whatif.Record(right, of)))
	}
}

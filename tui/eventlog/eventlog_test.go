package eventlog

import (
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"

	"selmix/tui/history"
	"selmix/tui/internal/fixture"
)

func TestView(t *testing.T) {
	withNotes := func() *history.Run {
		r := fixture.Apply(fixture.Info(10), fixture.Running(10, 8))
		r.Note(history.Warn, "fork is not available yet")
		r.Apply(fixture.Final(r.Latest))
		return r
	}
	cases := []struct {
		name string
		run  *history.Run
		w, h int
		keys []string
	}{
		{"empty", history.New(fixture.Info(10)), 40, 3, nil},
		{"tail", withNotes(), 78, 8, nil},
		{"scrolled-back", withNotes(), 78, 5, []string{"k", "k", "k"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := New(fixture.Plain(), c.run)
			m.SetSize(c.w, c.h)
			for _, k := range c.keys {
				m.Update(tea.KeyPressMsg{Text: k, Code: rune(k[0])})
			}
			v := m.View()
			fixture.CheckBox(t, v, c.w, c.h)
			golden.RequireEqual(t, m.Title()+"\n"+v)
		})
	}
}

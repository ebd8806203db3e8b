package workbench

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"selmix/core/loop"
	"selmix/core/train"
	"selmix/tui/internal/fixture"
)

// drain carries out cmd as Bubble Tea would, feeding every message back
// to m, until nothing is left.
func drain(m *Model, cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	msg := cmd()
	if b, ok := msg.(tea.BatchMsg); ok {
		for _, c := range b {
			drain(m, c)
		}
		return
	}
	if msg == nil {
		return
	}
	_, next := m.Update(msg)
	drain(m, next)
}

// withBasis is the running fixture at K with its last refresh carrying
// statistics to forecast from; it returns them.
func withBasis(t *testing.T, ctl Controller) (*Model, *loop.Basis) {
	t.Helper()
	m := newRunning(t, 10, 120, 36, ctl)
	last := m.run.Latest
	b := fixture.Basis(10, last.Step, last.Total)
	s := fixture.Refresh(10, 8, last.Total, last.Hyper.Objective)
	rs := *s.Refresh
	rs.Basis = b
	s.Refresh = &rs
	drain(m, m.updateCmd(SnapshotMsg{s}))
	return m, b
}

func (m *Model) updateCmd(msg tea.Msg) tea.Cmd {
	_, cmd := m.Update(msg)
	return cmd
}

// The edit form, the pickers and s± show the forecast of the candidate
// setting beside the one in force, as train.Preview computes it from the
// last refresh's statistics, with the linear model's record.
func TestPreviewShown(t *testing.T) {
	ctl := &recorder{}
	m, b := withBasis(t, ctl)
	cur := m.run.Latest.Hyper
	forecast := func(key, value string) loop.Forecast {
		t.Helper()
		next := cur
		if err := next.Set(key, value); err != nil {
			t.Fatal(err)
		}
		f, err := train.Preview(b, cur, next)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	right, of := m.run.TrackRecord(40)
	record := fmt.Sprintf("linear model: sign right in %d of the last %d intervals", right, of)
	if of == 0 {
		t.Fatal("the fixture has no interval with a prediction")
	}
	keys := func(ks ...string) {
		for _, k := range ks {
			drain(m, m.updateCmd(fixture.Key(k)))
		}
	}
	screen := func() string { return strings.Join(strings.Fields(m.Render()), " ") }

	keys("e", "ctrl+u", "2", "0")
	f := forecast("s", "20")
	want := fmt.Sprintf("next interval Δψ: now %+.4f · with s=20 %+.4f", f.Now.Delta, f.Next.Delta)
	if s := screen(); !strings.Contains(s, want) || !strings.Contains(s, record) {
		t.Errorf("edit form: want %q and %q on\n%s", want, record, m.Render())
	}
	keys("ctrl+u", "-", "1")
	if s := screen(); !strings.Contains(s, "no forecast: s: want") {
		t.Errorf("edit form with s = -1: want the refusal on\n%s", m.Render())
	}
	keys("esc", "o", "down")
	f = forecast("objective", "gmean")
	want = fmt.Sprintf("now %+.4f in min-recall's ψ · with objective=gmean %+.4f in gmean's ψ", f.Now.Delta, f.Next.Delta)
	if s := screen(); !strings.Contains(s, want) {
		t.Errorf("objective picker: want %q on\n%s", want, m.Render())
	}
	keys("esc", "p", "down")
	f = forecast("policy", "uniform")
	want = fmt.Sprintf("now %+.4f · with policy=uniform %+.4f", f.Now.Delta, f.Next.Delta)
	if s := screen(); !strings.Contains(s, want) {
		t.Errorf("policy picker: want %q on\n%s", want, m.Render())
	}
	keys("esc")
	// The footer's forecast: its answer, not the tick that clears it.
	_, tick := m.Update(m.updateCmd(fixture.Key("+"))())
	if tick == nil {
		t.Fatal("no tick to clear the footer")
	}
	f = forecast("s", "12.5")
	want = fmt.Sprintf("next interval Δψ: now %+.4f · with s=12.5 %+.4f", f.Now.Delta, f.Next.Delta)
	lines := strings.Split(m.Render(), "\n")
	if foot := lines[len(lines)-1]; !strings.Contains(foot, want) {
		t.Errorf("after +, the footer is %q, want %q", foot, want)
	}
	m.Update(flashEndMsg{m.flashSeq})
	lines = strings.Split(m.Render(), "\n")
	if foot := lines[len(lines)-1]; strings.Contains(foot, "Δψ") {
		t.Errorf("the footer still shows the forecast: %q", foot)
	}
	if got := ctl.controls(); len(got) != 1 || got[0].Key != "s" || got[0].Value != "12.5" {
		t.Errorf("sent %v, want only s=12.5 (a preview sends nothing)", got)
	}
}

// An answer that comes after its form closed and the fork form opened
// stays out of the fork form.
func TestPreviewLateAnswer(t *testing.T) {
	m, _ := withBasis(t, &recorder{})
	m.fork = func(string, []string) (string, error) { return "", nil }
	_, compute := m.Update(fixture.Key("e"))
	m.Update(fixture.Key("esc"))
	m.Update(fixture.Key("f"))
	if top := m.dialogs.Top(); top == nil || top.ID() != forkID {
		t.Fatalf("the fork form is not open: %v", top)
	}
	drain(m, compute)
	if s := m.Render(); strings.Contains(s, "Δψ") {
		t.Errorf("the fork form shows the edit form's forecast:\n%s", s)
	}
}

// Without statistics (before a refresh brought them) the form says so.
func TestPreviewWithoutBasis(t *testing.T) {
	m := newRunning(t, 10, 120, 36, &recorder{})
	drain(m, m.updateCmd(fixture.Key("e")))
	if s := m.Render(); !strings.Contains(s, "no forecast: no statistics of the last refresh") {
		t.Errorf("want the reason on\n%s", s)
	}
}

// The edit form with its forecast at 80×24, where the panes are tabs
// (golden: testdata/TestPreviewGolden.golden).
func TestPreviewGolden(t *testing.T) {
	m, _ := withBasis(t, &recorder{})
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	for _, k := range []string{"e", "ctrl+u", "2"} {
		drain(m, m.updateCmd(fixture.Key(k)))
	}
	fixture.GoldenScreen(t, m.Render(), 80, 24)
}

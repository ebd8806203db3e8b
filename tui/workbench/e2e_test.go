package workbench

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/teatest/v2"

	"selmix/core/loop"
	"selmix/tui/internal/fixture"
)

// Keys go through tm.Send, like snapshots, so the test controls their
// order; typed input would race with the acks.

// start runs a workbench in teatest fed with a running K=10 run.
func start(t *testing.T, ctl Controller) (*teatest.TestModel, []loop.Snapshot) {
	t.Helper()
	m := New(Options{Info: fixture.Info(10), Ctl: ctl})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(100, 30))
	snaps := fixture.Running(10, 5)
	for _, s := range snaps {
		tm.Send(SnapshotMsg{s})
	}
	return tm, snaps
}

// waitControls waits until ctl has received n controls.
func waitControls(t *testing.T, ctl *recorder, n int) []loop.Control {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if got := ctl.controls(); len(got) >= n {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("got controls %v, want %d", ctl.controls(), n)
	return nil
}

func ack(last loop.Snapshot, c loop.Control, state loop.State) SnapshotMsg {
	s := last
	s.Kind, s.State = loop.KindControl, state
	if c.Op == loop.OpSet && c.Key == "s" {
		s.Hyper.S = 12.5
	}
	s.Ack = &loop.Ack{Control: c, Step: last.Step}
	return SnapshotMsg{s}
}

func quit(t *testing.T, tm *teatest.TestModel) *Model {
	t.Helper()
	tm.Send(fixture.Key("q"))
	tm.Send(fixture.Key("y"))
	fm, ok := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*Model)
	if !ok {
		t.Fatal("final model is not *Model")
	}
	if !fm.Quit() {
		t.Error("the model did not record that the user quit")
	}
	return fm
}

func TestE2EPause(t *testing.T) {
	ctl := &recorder{}
	tm, snaps := start(t, ctl)
	tm.Send(fixture.Key("space"))
	got := waitControls(t, ctl, 1)
	if got[0].Op != loop.OpPause {
		t.Fatalf("space sent %v, want pause", got[0])
	}
	tm.Send(ack(snaps[len(snaps)-1], got[0], loop.Paused))
	// Paused now: space resumes and n steps.
	tm.Send(fixture.Key("n"))
	tm.Send(fixture.Key("space"))
	got = waitControls(t, ctl, 3)
	if got[1].Op != loop.OpStep || got[2].Op != loop.OpResume {
		t.Errorf("after the pause ack, n and space sent %v, want step and resume", got[1:])
	}
	fm := quit(t, tm)
	if fm.Run().Latest.State != loop.Paused {
		t.Errorf("state after the ack = %q, want paused", fm.Run().Latest.State)
	}
}

func TestE2ESetS(t *testing.T) {
	ctl := &recorder{}
	tm, snaps := start(t, ctl)
	tm.Send(fixture.Key("+"))
	got := waitControls(t, ctl, 1)
	want := loop.Control{Op: loop.OpSet, Key: "s", Value: "12.5", Source: loop.SourceUser}
	if got[0] != want {
		t.Fatalf("+ sent %v, want %v", got[0], want)
	}
	tm.Send(ack(snaps[len(snaps)-1], got[0], loop.Running))
	// After the ack, - scales the acknowledged value back down.
	tm.Send(fixture.Key("-"))
	got = waitControls(t, ctl, 2)
	if want := (loop.Control{Op: loop.OpSet, Key: "s", Value: "10", Source: loop.SourceUser}); got[1] != want {
		t.Errorf("- after the ack sent %v, want %v", got[1], want)
	}
	fm := quit(t, tm)
	if s := fm.Run().Latest.Hyper.S; s != 12.5 {
		t.Errorf("s after the ack = %g, want 12.5", s)
	}
	last := fm.Run().Log[len(fm.Run().Log)-1].Text
	if last != "set s=12.5 ✓" {
		t.Errorf("last log line = %q, want the acknowledged set", last)
	}
}

func TestE2EQuitAsksFirst(t *testing.T) {
	ctl := &recorder{}
	tm, _ := start(t, ctl)
	tm.Send(fixture.Key("q"))
	tm.Send(fixture.Key("n")) // keep watching: n closes the question, it is not "step"
	tm.Send(fixture.Key("q"))
	tm.Send(fixture.Key("y"))
	fm := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*Model)
	if !fm.Quit() {
		t.Error("q then y did not quit")
	}
	if got := ctl.controls(); len(got) != 0 {
		t.Errorf("quitting sent %v; the caller stops the run, the model sends nothing", got)
	}
}

// K = 1000: sort the classes, find one by typing (keys that are global
// elsewhere are text in the prompt and send nothing), then jump the
// heatmap to the worst row and zoom back out.
func TestE2ESortJumpZoom(t *testing.T) {
	ctl := &recorder{}
	m := New(Options{Info: fixture.Info(1000), Ctl: ctl})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(160, 50))
	for _, s := range fixture.Running(1000, 3) {
		tm.Send(SnapshotMsg{s})
	}
	for _, k := range []string{"r", "/", "q", "space", "n", "p", "backspace", "backspace", "backspace", "backspace", "1", "2", "3", "enter",
		"tab", "w"} {
		tm.Send(fixture.Key(k))
	}
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("worst class, its largest P")) },
		teatest.WithDuration(5*time.Second))
	tm.Send(fixture.Key("esc"))
	fm := quit(t, tm)
	screen := fm.Render()
	for _, want := range []string{"by coverage ↑", "» class 123", "rows 539–615 × cols 231–307", "enter/z zoom"} {
		if !strings.Contains(screen, want) {
			t.Errorf("final screen lacks %q:\n%s", want, screen)
		}
	}
	if strings.Contains(screen, "zoom 539") {
		t.Errorf("esc did not zoom out:\n%s", screen)
	}
	if got := ctl.controls(); len(got) != 0 {
		t.Errorf("typing in the prompt sent %v", got)
	}
}

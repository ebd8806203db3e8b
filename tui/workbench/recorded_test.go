package workbench

import (
	"bytes"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"selmix/core/loop"
	"selmix/runs"
	"selmix/runs/record"
)

// selmix open's replay on recorded runs of both formats: the history
// first, then G and P of the last refresh from disk, then a frame.
func TestRecordedReplay(t *testing.T) {
	t.Parallel()
	v1 := filepath.Join("..", "..", "runs", "record", "testdata", "v1run")
	for _, c := range []struct{ root, name string }{
		{v1, "min-recall-selmix"},
		{v1, "min-recall-selmix-fork"},
		{filepath.Join("..", "..", "viz", "testdata", "run"), "viz-selmix"},
	} {
		r, err := runs.Open(c.root, c.name)
		if err != nil {
			t.Fatal(err)
		}
		h, err := record.Load(r)
		if err != nil {
			t.Fatal(err)
		}
		m, snaps := Recorded(r, h, Options{})
		frame := m.FirstScreen(snaps, 140, 42)
		last := len(h.Refreshes) - 1
		G, _, err := h.Matrices(last)
		if err != nil {
			t.Fatal(err)
		}
		cur := m.Run().Cur
		if cur == nil || cur.Step != h.Refreshes[last].Step || !reflect.DeepEqual(cur.G, G) {
			t.Fatalf("%s: the workbench does not show the last refresh's G", c.name)
		}
		if got := len(m.Run().Steps); got != len(h.Refreshes) {
			t.Errorf("%s: %d refreshes in the workbench, %d in the log", c.name, got, len(h.Refreshes))
		}
		if !strings.Contains(frame, "Trouser") || m.State() != Finished || m.ctl != nil {
			t.Errorf("%s: state %v, controller %v, frame:\n%s", c.name, m.State(), m.ctl, frame)
		}
	}
}

// When the last refresh did not keep G and P, the latest that did is
// shown, and the event log says from which step.
func TestLoadMatricesThinned(t *testing.T) {
	t.Parallel()
	G := []float64{1, 2, 3, 4}
	h := &record.History{Refreshes: []record.RefreshEvent{
		{Step: 0, Stats: loop.Refresh{K: 2, G: G, P: G}},
		{Step: 50, Stats: loop.Refresh{K: 2}},
	}}
	msg := LoadMatrices(h)()
	if msg.Step != 50 || !reflect.DeepEqual(msg.G, G) || !strings.Contains(msg.Note, "from step 0") {
		t.Errorf("thinned: %+v", msg)
	}
	h.Refreshes[0].Stats.G = nil
	if msg := LoadMatrices(h)(); msg.G != nil || !strings.Contains(msg.Note, "no refresh") {
		t.Errorf("none kept: %+v", msg)
	}
	if msg := LoadMatrices(&record.History{})(); msg.G != nil || msg.Err != nil || msg.Note != "" {
		t.Errorf("no refresh at all: %+v", msg)
	}
}

func TestHoldWriter(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	h := &HoldWriter{W: &out}
	h.Write([]byte("before\n"))
	h.Hold()
	h.Write([]byte("during\n"))
	if got := out.String(); got != "before\n" {
		t.Errorf("while held the terminal got %q, want only what came before", got)
	}
	h.Release()
	h.Write([]byte("after\n"))
	if got, want := out.String(), "before\nduring\nafter\n"; got != want {
		t.Errorf("output = %q, want %q", got, want)
	}
}

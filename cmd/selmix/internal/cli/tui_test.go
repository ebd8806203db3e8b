package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"selmix/core/train"
	"selmix/runs"
	"selmix/runs/record"
	"selmix/tui"
	"selmix/tui/history"
)

func TestHoldWriter(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	h := &holdWriter{w: &out}
	h.Write([]byte("before\n"))
	h.hold()
	h.Write([]byte("during\n"))
	if got := out.String(); got != "before\n" {
		t.Errorf("while held the terminal got %q, want only what came before", got)
	}
	h.release()
	h.Write([]byte("after\n"))
	if got, want := out.String(), "before\nduring\nafter\n"; got != want {
		t.Errorf("output = %q, want %q", got, want)
	}
}

func TestWorkbenchInputErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "keys.toml")
	if err := os.WriteFile(bad, []byte("paws = \"p\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"bad keys file", []string{"tui", "--keys", bad}, []string{"keys.toml", `"paws"`}},
		{"no terminal", []string{"tui", "--runs", dir}, []string{"needs a terminal", "--headless"}},
		{"bare selmix, no terminal", []string{"--runs", dir}, []string{"needs a terminal"}},
		{"open needs a run", []string{"open"}, []string{"accepts 1 arg"}},
		{"stray argument", []string{"nonsense"}, []string{"unknown command"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("XDG_CONFIG_HOME", dir+"/none")
			var stdout, stderr bytes.Buffer
			code := Main(c.args, &stdout, &stderr)
			if code != 2 {
				t.Errorf("exit code %d, want 2 (stderr %q)", code, stderr.String())
			}
			for _, w := range c.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr %q does not mention %q", stderr.String(), w)
				}
			}
		})
	}
}

// selmix open's replay on recorded runs of both formats: the history
// first, then G and P of the last refresh from disk, then a frame.
func TestOpenReplay(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ root, name string }{
		{filepath.Join("..", "..", "..", "..", "runs", "record", "testdata", "v1run"), "min-recall-selmix"},
		{filepath.Join("..", "..", "..", "..", "runs", "record", "testdata", "v1run"), "min-recall-selmix-fork"},
		{vizRuns, "viz-selmix"},
	} {
		r, err := runs.Open(c.root, c.name)
		if err != nil {
			t.Fatal(err)
		}
		h, err := record.Load(r)
		if err != nil {
			t.Fatal(err)
		}
		m := tui.New(tui.Options{Info: history.RunInfo{ID: r.Meta.ID, ClassNames: h.Starts[0].ClassNames, ReadOnly: true}, LoadMatrices: loadMatrices(h)})
		m.Update(tea.WindowSizeMsg{Width: 140, Height: 42})
		m.Update(tui.SnapshotsMsg(record.Snapshots(h)))
		m.Update(m.Init()())
		m.Update(tui.ClosedMsg{})
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
		if frame := m.Render(); !strings.Contains(frame, "Trouser") || m.State() != tui.Finished {
			t.Errorf("%s: state %v, frame:\n%s", c.name, m.State(), frame)
		}
	}
}

// When the last refresh did not keep G and P, the latest that did is
// shown, and the event log says from which step.
func TestLoadMatricesThinned(t *testing.T) {
	t.Parallel()
	G := []float64{1, 2, 3, 4}
	h := &record.History{Refreshes: []record.RefreshEvent{
		{Step: 0, Stats: train.Refresh{K: 2, G: G, P: G}},
		{Step: 50, Stats: train.Refresh{K: 2}},
	}}
	msg := loadMatrices(h)()
	if msg.Step != 50 || !reflect.DeepEqual(msg.G, G) || !strings.Contains(msg.Note, "from step 0") {
		t.Errorf("thinned: %+v", msg)
	}
	h.Refreshes[0].Stats.G = nil
	if msg := loadMatrices(h)(); msg.G != nil || !strings.Contains(msg.Note, "no refresh") {
		t.Errorf("none kept: %+v", msg)
	}
	if msg := loadMatrices(&record.History{})(); msg.G != nil || msg.Err != nil || msg.Note != "" {
		t.Errorf("no refresh at all: %+v", msg)
	}
}

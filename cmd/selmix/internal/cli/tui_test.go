package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"selmix/core/metric"
	"selmix/core/train"
	"selmix/runs/record"
)

func TestRecordedSnapshots(t *testing.T) {
	h := train.DefaultHyper()
	stats := train.RefreshStats{K: 2, Objectives: make([]float64, len(metric.Objectives()))}
	hist := &record.History{
		Starts: []record.Start{{Step: 0, Total: 100, K: 2}},
		Refreshes: []record.Refresh{
			{Step: 0, Total: 100, State: train.Running, Hyper: h, Stats: stats},
			{Step: 50, Total: 100, State: train.Running, Hyper: h, Stats: stats},
		},
		Controls: []train.Ack{{Control: train.Control{Op: train.OpSet, Key: "s", Value: "5"}, Step: 50}},
		Final:    &train.Summary{Steps: 60},
	}
	got := recordedSnapshots(hist)
	kinds := make([]train.Kind, len(got))
	for i, s := range got {
		kinds[i] = s.Kind
		if s.Total != 100 {
			t.Errorf("snapshot %d Total = %d, want 100", i, s.Total)
		}
	}
	want := []train.Kind{train.KindRefresh, train.KindControl, train.KindRefresh, train.KindFinal}
	if len(kinds) != len(want) {
		t.Fatalf("kinds = %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("kinds = %v, want %v (a control applies before the refresh at its step)", kinds, want)
		}
	}
	if got[1].Hyper.Objective != h.Objective {
		t.Error("an ack does not carry the last known hyperparameters")
	}
	if got[3].State != train.Stopped {
		t.Errorf("a run ending at step 60 of 100 shows %q, want stopped", got[3].State)
	}
}

func TestHoldWriter(t *testing.T) {
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

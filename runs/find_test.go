package runs

import (
	"os"
	"path/filepath"
	"testing"
)

// Find takes a run directory anywhere, or an id, prefix or name in the
// runs root.
func TestFind(t *testing.T) {
	root, other := t.TempDir(), t.TempDir()
	makeRun(t, root, "20260101-0000-aaaa", "alpha")
	makeRun(t, other, "20260102-0000-bbbb", "beta")
	if err := os.Symlink("20260102-0000-bbbb", filepath.Join(other, "latest")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, arg, want string }{
		{"name", "alpha", "20260101-0000-aaaa"},
		{"prefix", "20260101", "20260101-0000-aaaa"},
		{"directory elsewhere", filepath.Join(other, "20260102-0000-bbbb") + "/", "20260102-0000-bbbb"},
		{"a link to a run's directory", filepath.Join(other, "latest"), "20260102-0000-bbbb"},
	} {
		r, err := Find(root, c.arg)
		if err != nil || r.Meta.ID != c.want {
			t.Errorf("%s: Find(%q) = %v, %v; want run %s", c.name, c.arg, r, err, c.want)
		}
	}
	if _, err := Find(root, "beta"); err == nil {
		t.Error("Find(beta) found a run of another root")
	}
}

// The workbench learns from a recorded run's config whether a worker
// trains it (its console then waits for the worker's lines).
func TestWorkerCommand(t *testing.T) {
	root := t.TempDir()
	for _, c := range []struct{ config, want string }{
		{"[worker]\ncommand = [\"python3\", \"w.py\", \"--recipe\", \"features\"]\n", "python3 w.py --recipe features"},
		{"[worker]\ncommand = []\n", ""},
		{"seed = 1\n", ""},
	} {
		w, err := Create(root, "w", c.config, Meta{Status: StatusFinished})
		if err != nil {
			t.Fatal(err)
		}
		id := w.ID()
		w.Close()
		r, err := Open(root, id)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.WorkerCommand(); got != c.want {
			t.Errorf("config %q: WorkerCommand = %q, want %q", c.config, got, c.want)
		}
	}
}

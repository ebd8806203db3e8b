package runs

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// WorkerLines reads the last lines of a run's worker log across its
// files, oldest first.
func TestWorkerLines(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, WorkerLogName), []byte("a\nb\nc\n"), 0o644)
	os.WriteFile(filepath.Join(dir, WorkerTailName+".1"), []byte("d\n"), 0o644)
	os.WriteFile(filepath.Join(dir, WorkerTailName), []byte("e\nf"), 0o644)
	if got := WorkerLines(dir, 4); !slices.Equal(got, []string{"c", "d", "e", "f"}) {
		t.Errorf("last 4: %q", got)
	}
	if got := WorkerLines(dir, 100); len(got) != 6 {
		t.Errorf("all: %q", got)
	}
	if got := WorkerLines(t.TempDir(), 5); got != nil {
		t.Errorf("no log: %q", got)
	}
}

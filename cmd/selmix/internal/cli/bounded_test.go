package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"selmix/cmd/selmix/internal/selmixtest"
)

// Every file a command reads is refused before it is read if it is not a
// regular file (opening a FIFO would block, /dev/zero never ends): one
// line naming the file (and the key that pointed at it), exit 2, nothing
// created. These are the cases of the hostile probe (issue 25, item 2).
func TestSpecialFilesRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "spec.toml")
	if err := os.WriteFile(spec, []byte("name = \"s\"\nbase_config = \"/dev/zero\"\n[axes]\nseed = [1, 2]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	features := []string{"--set", "data.source=features", "--set", "model.arch=identity", "--set", "data.val=" + fifo, "--set", "data.test=" + fifo}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"sweep base_config", []string{"sweep", spec, "--dry-run"}, spec + ": base_config: /dev/zero is not a regular file (a character device)"},
		{"run --config", []string{"run", "--headless", "--config", "/dev/zero"}, "/dev/zero is not a regular file (a character device)"},
		{"model.checkpoint", []string{"run", "--headless", "--set", "model.checkpoint=/dev/zero"}, "model.checkpoint: /dev/zero is not a regular file (a character device)"},
		{"data.class_names", []string{"run", "--headless", "--set", "data.class_names=/dev/zero"}, "data.class_names: /dev/zero is not a regular file (a character device)"},
		{"data.train FIFO", append([]string{"run", "--headless", "--set", "data.train=" + fifo}, features...), "data.train: " + fifo + " is not a regular file (a named pipe)"},
		{"sweep spec FIFO", []string{"sweep", fifo, "--dry-run"}, fifo + " is not a regular file (a named pipe)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			out, code := selmixtest.Code(t, append(os.Environ(), "SELMIX_RUNS="+root), c.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2:\n%s", code, out)
			}
			if got, want := strings.TrimSpace(out), "selmix: "+c.want; got != want {
				t.Errorf("output\n%q\nwant one line\n%q", got, want)
			}
			if ents, _ := os.ReadDir(root); len(ents) != 0 {
				t.Errorf("a refused command left %d entries in the run store", len(ents))
			}
		})
	}
}

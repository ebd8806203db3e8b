package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"selmix/runs"
	"selmix/runs/export/tensorboard"
)

// export --format tensorboard writes one event file per run (by name or
// by directory) and the HParams experiment.
func TestExportTensorBoard(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	all, _ := runs.List(vizRuns)
	code, stdout, stderr := runCLI("export", "--format", "tensorboard", "--runs", vizRuns, "viz-selmix", all[1].Dir, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, r := range all {
		created, _ := time.Parse(time.RFC3339, r.Meta.Created)
		path := filepath.Join(out, r.Meta.Name, tensorboard.RunFile(created))
		if fi, err := os.Stat(path); err != nil || fi.Size() == 0 || !strings.Contains(stdout, path) {
			t.Errorf("%s: %v; output:\n%s", path, err, stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(out, tensorboard.ExperimentFile)); err != nil || !strings.Contains(stdout, "tensorboard --logdir "+out) {
		t.Errorf("experiment: %v; output:\n%s", err, stdout)
	}
	for _, args := range [][]string{
		{"export", "--format", "tensorboard", "--compare", "viz-selmix", "viz-uniform"},
		{"export", "--format", "tensorboard", "--metric", "psi", "viz-selmix"},
		{"export", "--format", "tensorboard", "nope"},
		{"export", "--format", "nope", "viz-selmix"},
	} {
		if code, _, stderr := runCLI(append(args, "--runs", vizRuns, "--out", t.TempDir())...); code != 2 || strings.Count(stderr, "\n") != 1 && !strings.Contains(stderr, "no run") {
			t.Errorf("%v: exit %d, %q; want 2 and one line", args, code, stderr)
		}
	}
}

// --out naming a file, or a path through one, is bad input: exit 2 and
// one line naming it.
func TestExportTensorBoardOutIsAFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "afile")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{file, filepath.Join(file, "sub")} {
		code, _, stderr := runCLI("export", "--format", "tensorboard", "--runs", vizRuns, "viz-selmix", "--out", out)
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "--out "+out+": ") {
			t.Errorf("--out %s: exit %d, %q; want 2 and one line naming it", out, code, stderr)
		}
	}
}

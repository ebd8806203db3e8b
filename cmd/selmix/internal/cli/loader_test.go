package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"selmix/cmd/selmix/internal/selmixtest"
	"selmix/runs/runstest"
)

// mapRecipe is a recipe file of map-style data with seeded random
// transforms (the worker tests' fixtures): what loader processes read.
const mapRecipe = `import sys
sys.path.insert(0, %q)
from fixtures import built

def build(args):
    return built()
`

// A run whose data loader processes read (reading ahead across requests,
// dropping what they read at each new P) ends exactly as one read in the
// worker itself, for 0, 2 and 4 loader processes, and after SIGINT and a
// resume.
func TestTorchWorkerLoaderProcesses(t *testing.T) {
	t.Parallel()
	needTorch(t)
	recipe := filepath.Join(t.TempDir(), "noisy.py")
	if err := os.WriteFile(recipe, fmt.Appendf(nil, mapRecipe, filepath.Join(repoRoot(t), "workers", "torch", "tests")), 0o644); err != nil {
		t.Fatal(err)
	}
	settings := []string{"--set", "finetune.steps=120", "--set", "finetune.refresh=20", "--set", "finetune.batch=8",
		"--set", "finetune.checkpoint_every=1", "--set", "record.plots=false"}
	args := func(root string, loaders string) []string {
		a := append([]string{"--runs", root}, settings...)
		return append(a, workerCmd(t, "--recipe", recipe, "--loader-workers", loaders)...)
	}
	root := t.TempDir()
	var want *runstest.Outcome
	for _, n := range []string{"0", "2", "4"} {
		out := selmixtest.Run(t, append([]string{"run", "--headless", "-q"}, args(root, n)...)...)
		got := runstest.ReadOutcome(t, root, selmixtest.RunIDRe.FindStringSubmatch(out)[1])
		if want == nil {
			want = &got
			continue
		}
		runstest.SameOutcome(t, "--loader-workers "+n, got, *want)
	}

	// SIGINT at the refresh at step 40 (loader processes then hold batches read
	// ahead), then resume.
	cmd, sc := selmixtest.Start(t, nil, append([]string{"run", "--headless"}, args(root, "2")...)...)
	var out selmixtest.Output
	for sc.Scan() {
		out.Add(sc.Text())
		if strings.HasPrefix(sc.Text(), "step    40/") {
			cmd.Process.Signal(syscall.SIGINT)
			break
		}
	}
	selmixtest.Drain(sc)
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("SIGINT: %v, want exit 130\n%s", err, out.String())
	}
	selmixtest.Run(t, "resume", "-q", "--runs", root, out.ID)
	runstest.SameOutcome(t, "after SIGINT and resume", runstest.ReadOutcome(t, root, out.ID), *want)
}

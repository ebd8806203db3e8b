package lifecycle

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"selmix/cmd/selmix/internal/selmixtest"
	"selmix/core/worker/workertest"
	"selmix/runs"
)

// The test binary doubles as a fake worker (workertest.Serve) for the
// binary's worker runs.
func TestMain(m *testing.M) {
	if mode := os.Getenv(workertest.Env); mode != "" {
		os.Exit(workertest.Serve(mode))
	}
	selmixtest.Main(m)
}

// shortRun is a small fine-tuning run of the built-in experiment that
// checkpoints often, so kills land between checkpoints. Its batch of 32
// pairs (the default is 128) halves the cost of a step; the tests ask
// nothing of its numbers but that they come out the same again.
var shortRun = []string{"--set", "finetune.steps=300", "--set", "finetune.refresh=25", "--set", "finetune.checkpoint_every=2",
	"--set", "finetune.batch=32", "--set", "record.plots=false"}

// sharedShortRun is one finished shortRun, made once per test process for
// the tests that read it; they must not write into its root: a test that
// resumes, forks or replays it works on a copy (copyRun).
func sharedShortRun(t *testing.T) (root, id string) {
	t.Helper()
	return sharedRun(t, "shortRun", shortRun)
}

// sharedRun is one finished run of the built-in experiment with the
// overrides sets, made once per test process and key.
func sharedRun(t *testing.T, key string, sets []string) (root, id string) {
	t.Helper()
	bin := selmixtest.Binary(t)
	root = selmixtest.Shared(t, key, func(dir string) error {
		out, err := exec.Command(bin, append([]string{"run", "--headless", "-q", "--runs", dir}, sets...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("selmix run: %v\n%s", err, out)
		}
		return nil
	})
	rs, err := runs.List(root)
	if err != nil || len(rs) != 1 {
		t.Fatalf("shared run %s in %s: %d runs, %v", key, root, len(rs), err)
	}
	return root, filepath.Base(rs[0].Dir)
}

// A full disk (a small tmpfs) stops the run with a message naming the file
// and the reason; the run directory stays valid and, once there is room
// again, resumes to the end.
func TestFullDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	root := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=5m", "tmpfs", root).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v %s", err, out)
	}
	defer exec.Command("umount", "-l", root).Run()
	// Checkpoints are ~1.9 MB: the third one does not fit.
	cmd := exec.Command(selmixtest.Binary(t), "run", "--headless", "-q", "--runs", root,
		"--set", "finetune.steps=300", "--set", "finetune.refresh=25", "--set", "finetune.checkpoint_every=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the run did not stop on a full disk:\n%s", out)
	}
	if !strings.Contains(string(out), "no space left on device") || !strings.Contains(string(out), ".ckpt") {
		t.Errorf("message does not say what failed and why:\n%s", out)
	}
	id := selmixtest.RunIDRe.FindStringSubmatch(string(out))[1]
	r, err := runs.Open(root, id)
	if err != nil {
		t.Fatalf("run directory does not open after the full disk: %v", err)
	}
	if _, warns, err := r.Events(); err != nil || len(warns) > 0 {
		t.Errorf("event log after the full disk: err %v, warnings %v", err, warns)
	}
	if st := r.EffectiveStatus(); st != runs.StatusError {
		t.Errorf("status %s, want error", st)
	}
	if out, err := exec.Command("mount", "-o", "remount,size=64m", root).CombinedOutput(); err != nil {
		t.Fatalf("remount: %v %s", err, out)
	}
	selmixtest.Run(t, "resume", "-q", "--runs", root, id)
	r, _ = runs.Open(root, id)
	if st := r.EffectiveStatus(); st != runs.StatusFinished {
		t.Errorf("after resume: status %s, want finished", st)
	}
}

// What a hostile user tried on a finished run: a torn last line makes it
// unfinished to resume and replay alike (resume finishes it, replay then
// agrees), and negative steps are refused with exit 2.
func TestHostileLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	root, id := sharedShortRun(t)
	root = copyRun(t, root, id)
	r, err := runs.Open(root, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"fork", id, "--at", "-5"}, {"export-head", id, "--step", "-1", "--out", filepath.Join(root, "h.npz")}} {
		code, _, stderr := runCLI(append(args, "--runs", root)...)
		if code != 2 || !strings.Contains(stderr, "≥ 0") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line", args, code, stderr)
		}
	}
	log := filepath.Join(r.Dir, "events.jsonl")
	st, err := os.Stat(log)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(log, st.Size()-20); err != nil {
		t.Fatal(err)
	}
	if res := selmixtest.Run(t, "resume", "-q", "--runs", root, id); !strings.Contains(res, "finished at step 300") {
		t.Errorf("resume of a run whose final line is torn:\n%s", res)
	}
	if rep := selmixtest.Run(t, "replay", "--runs", root, id); !strings.Contains(rep, "is identical to "+id) {
		t.Errorf("replay after the resume:\n%s", rep)
	}
}

package lifecycle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"selmix/cmd/selmix/internal/selmixtest"
	"selmix/core/worker/workertest"
	"selmix/runs"
	"selmix/runs/live/livetest"
)

// A run paused in the workbench, detached and re-attached, shows paused
// (issue #37, bug 1): the header says so at once, the system line is
// there before the run moves, one space resumes it, and detaching says
// the run stays paused. Driven in tmux at 120×36 as a person would.
func TestTmuxPausedDetachedReattached(t *testing.T) {
	tm, bin, root := tmuxLongRun(t)
	tm.WaitFor("● running", 60*time.Second)
	tm.Type("Space")
	tm.WaitFor("● paused", 20*time.Second)
	tm.Type("q")
	tm.WaitFor("detach", 10*time.Second)
	tm.Type("d")
	s := tm.WaitFor("detached;", 20*time.Second)
	if !strings.Contains(s, "stays paused at step") || strings.Contains(s, "goes on") {
		t.Errorf("detaching a paused run says:\n%s", s)
	}
	tm.Line("clear; " + bin + " attach --runs " + root)
	s = tm.WaitFor("objective min-recall", 30*time.Second)
	time.Sleep(time.Second) // the live stream's first snapshot
	s = tm.Screen()
	head, sys := selmixtest.Lines(s, 0), selmixtest.Lines(s, 1)
	if !strings.Contains(head, "● paused") {
		t.Errorf("re-attached paused run's header: %q\n%s", head, s)
	}
	if !strings.Contains(sys, "rss") {
		t.Errorf("re-attached paused run's progress line has no system part: %q", sys)
	}
	tm.Type("Space")
	tm.WaitFor("● running", 10*time.Second)
	tm.Type("q")
	tm.WaitFor("detach", 10*time.Second)
	tm.Type("d")
	tm.WaitFor("goes on", 20*time.Second)
}

// A worker's start-up shows live while the workbench waits for the run,
// with a progress line, and the c console has it once the workbench is
// up (issue #37, bug 2: "starting the run in the background…" alone for
// 12 s, then "no lines from the worker yet").
func TestTmuxWorkerStartup(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary in tmux")
	}
	t.Parallel()
	bin := selmixtest.Binary(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root := livetest.ShortDir(t)
	script := filepath.Join(root, "w.sh")
	body := "for i in 1 2 3; do echo \"pretrain epoch $i/3 loss 2.3$i\" >&2; sleep 0.7; done\nexec " + self + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	tm := selmixtest.NewTmux(t, 120, 36, root)
	tm.Line(workertest.Env + "=ok " + bin + " tui --runs " + root + " --set finetune.steps=20000 --worker -- sh " + script)
	s := tm.WaitFor("pretrain epoch 2/3 loss 2.32", 20*time.Second)
	if !strings.Contains(s, "pretrain epoch 1/3 loss 2.31") {
		t.Errorf("the start-up lost its first line:\n%s", s)
	}
	defer func() {
		if all, err := runs.List(root); err == nil {
			for _, r := range all {
				if r.Live {
					selmixtest.Code(t, nil, "stop", "--runs", root, r.Meta.ID)
				}
			}
		}
	}()
	tm.WaitFor("● running", 30*time.Second)
	tm.Type("S-Tab")
	tm.Type("c")
	tm.Type("Space") // pause: the fake worker's lines stop coming
	tm.WaitFor("● paused", 10*time.Second)
	tm.Type("Home") // the console's first lines
	s = tm.WaitFor("pretrain epoch 3/3 loss 2.33", 10*time.Second)
	if !strings.Contains(s, "pretrain epoch 1/3 loss 2.31") {
		t.Errorf("the console lacks the start-up:\n%s", s)
	}
	tm.Type("q")
	tm.WaitFor("detach", 10*time.Second)
	tm.Type("y")
	tm.WaitFor("stopped at step", 30*time.Second)
}

// attach --follow lines carry the "P:" part the headless lines have
// (issue #37: it was dropped, the follower asking for no matrices).
func TestFollowLinesHaveP(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	root := livetest.ShortDir(t)
	id := startDetached(t, root, "--set", "finetune.steps=20000", "--set", "finetune.refresh=25")
	defer selmixtest.Code(t, nil, "stop", "--runs", root, id)
	cmd, sc := selmixtest.Start(t, nil, "attach", "--follow", "--runs", root, id)
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "step ") && strings.Contains(l, "ψ") {
			if !strings.Contains(l, "  P: ") {
				t.Errorf("attach --follow line without P: %q", l)
			}
			return
		}
	}
	t.Fatal("attach --follow printed no refresh line")
}

// tmuxLongRun starts the workbench on a 20000-step built-in run in tmux at
// 120×36 with extra settings (--set KEY=VALUE), in a runs root of its own,
// and stops whatever still runs there when the test ends. It skips in
// -short mode and runs the test in parallel.
func tmuxLongRun(t *testing.T, set ...string) (tm *selmixtest.Tmux, bin, root string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the real binary in tmux")
	}
	t.Parallel()
	bin = selmixtest.Binary(t)
	root = livetest.ShortDir(t)
	tm = selmixtest.NewTmux(t, 120, 36, root)
	line := bin + " tui --runs " + root + " --set finetune.steps=20000"
	for _, kv := range set {
		line += " --set " + kv
	}
	tm.Line(line)
	t.Cleanup(func() {
		tm.Type("C-c")
		if all, err := runs.List(root); err == nil {
			for _, r := range all {
				if r.Live {
					selmixtest.Code(t, nil, "stop", "--runs", root, r.Meta.ID)
				}
			}
		}
	})
	return tm, bin, root
}

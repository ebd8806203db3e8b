package lifecycle

import (
	"strings"
	"testing"
	"time"

	"selmix/cmd/selmix/internal/selmixtest"
	"selmix/runs"
	"selmix/runs/live/livetest"
)

// A run paused in the workbench, detached and re-attached, shows paused
// (issue #37, bug 1): the header says so at once, the system line is
// there before the run moves, one space resumes it, and detaching says
// the run stays paused. Driven in tmux at 120×36 as a person would.
func TestTmuxPausedDetachedReattached(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary in tmux")
	}
	t.Parallel()
	bin := selmixtest.Binary(t)
	root := livetest.ShortDir(t)
	tm := selmixtest.NewTmux(t, 120, 36, root)
	tm.Line(bin + " tui --runs " + root + " --set finetune.steps=20000")
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
	defer func() {
		tm.Type("C-c")
		if all, err := runs.List(root); err == nil {
			for _, r := range all {
				if r.Live {
					selmixtest.Code(t, nil, "stop", "--runs", root, r.Meta.ID)
				}
			}
		}
	}()
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

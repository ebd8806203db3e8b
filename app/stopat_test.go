package app

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"selmix/core/worker/workertest"
	"selmix/runs"
	"selmix/runs/record"
	"selmix/runs/sweep/sweeptest"
)

// Session.StopAt stops a run at that step and returns nil, with the
// refresh before it logged; resumed to the next stop and then to its end,
// the run logs and concludes exactly what the uninterrupted run does. A
// run already at or past its stop stops where it stands.
func TestStopAt(t *testing.T) {
	t.Setenv(workertest.Env, "ok")
	c := fakeConfig(t)
	root := t.TempDir()
	want := readOutcome(t, root, start(t, root, c))

	var out bytes.Buffer
	var id string
	s := session(root, &out, &id)
	s.StopAt = 11
	if err := s.Start(context.Background(), c, Origin{}); err != nil {
		t.Fatalf("Start to step 11: %v\n%s", err, out.String())
	}
	if w := fmt.Sprintf("run %s stopped at step 11, as asked; resumable with: selmix resume %s\n", id, id); !strings.Contains(out.String(), w) {
		t.Errorf("output lacks %q:\n%s", w, out.String())
	}
	// Each row: the stop asked, where the run stops, and the last refresh
	// logged before (the rung's: the stop comes one step after it).
	for _, c := range []struct{ stopAt, at, last int }{{21, 21, 10}, {15, 21, 20}, {0, 30, 20}} {
		r, err := runs.Open(root, id)
		if err != nil {
			t.Fatal(err)
		}
		h, err := record.Load(r)
		if err != nil {
			t.Fatal(err)
		}
		if last := h.Refreshes[len(h.Refreshes)-1].Step; r.EffectiveStatus() != runs.StatusStopped || last != c.last {
			t.Fatalf("before the stop at %d: status %s, last refresh at %d; want stopped, %d", c.stopAt, r.EffectiveStatus(), last, c.last)
		}
		out.Reset()
		s.StopAt = c.stopAt
		if err := s.Resume(context.Background(), id); err != nil {
			t.Fatalf("Resume to %d: %v\n%s", c.stopAt, err, out.String())
		}
		if c.stopAt == 0 {
			break
		}
		if w := fmt.Sprintf("run %s stopped at step %d, as asked", id, c.at); !strings.Contains(out.String(), w) {
			t.Errorf("resumed to %d: output lacks %q:\n%s", c.stopAt, w, out.String())
		}
	}
	sameOutcome(t, "stopped at 11 and 21 (twice)", readOutcome(t, root, id), want)
}

// A sweep member sent to a rung (sweep member --stop-at) stops there and
// exits 0; sent there again, it has nothing to do.
func TestSweepMemberStopAt(t *testing.T) {
	t.Setenv(workertest.Env, "ok")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sw := sweeptest.NewASHA(t, fmt.Sprintf(`name = "st"
[base]
"worker.command" = [%q]
"finetune.steps" = 30
"finetune.refresh" = 10
"finetune.batch" = 16
"record.plots" = false
[axes]
seed = [1, 2]
[asha]
min_steps = 10
`, self))
	if got := sw.ASHA.StopAt(0, 0); got != 11 {
		t.Fatalf("StopAt(0, 0) = %d, want 11", got)
	}
	var out bytes.Buffer
	s := &Session{Out: &out, Quiet: true, StopAt: 11}
	if err := s.SweepMember(context.Background(), sw, 0); err != nil {
		t.Fatalf("member 0 to step 11: %v\n%s", err, out.String())
	}
	psi, at, err := sw.RungPsi(0, 10)
	if err != nil || at != 10 || math.IsNaN(psi) {
		t.Errorf("ψ at rung 0: %v at %d (%v)", psi, at, err)
	}
	out.Reset()
	if err := s.SweepMember(context.Background(), sw, 0); err != nil || !strings.Contains(out.String(), "stopped at step 11, at or past 11: nothing to do") {
		t.Errorf("member 0 sent to step 11 again: %v\n%s", err, out.String())
	}
}

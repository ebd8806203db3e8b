package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"selmix/cmd/selmix/internal/selmixtest"
	"selmix/core/loop"
	"selmix/runs"
	"selmix/runs/live"
	"selmix/runs/live/livetest"
	"selmix/runs/runstest"
)

// An interruption of a run's process, the ways a person, a script or a
// cluster does it.
type interruption struct {
	name string
	code int // the process's exit code; -1: killed by the signal
	do   func(t *testing.T, cmd *exec.Cmd, root, id string)
}

var interruptions = []interruption{
	{"SIGINT", 130, func(t *testing.T, cmd *exec.Cmd, _, _ string) { cmd.Process.Signal(os.Interrupt) }},
	{"SIGTERM", 143, func(t *testing.T, cmd *exec.Cmd, _, _ string) { cmd.Process.Signal(syscall.SIGTERM) }},
	{"stop", 143, func(t *testing.T, cmd *exec.Cmd, root, id string) {
		out, err := exec.Command(selmixtest.Binary(t), "stop", "--runs", root, id).CombinedOutput()
		if err != nil && !strings.Contains(string(out), "not live") {
			t.Errorf("selmix stop %s: %v\n%s", id, err, out)
		}
	}},
	{"SIGKILL", -1, func(t *testing.T, cmd *exec.Cmd, _, _ string) { cmd.Process.Signal(syscall.SIGKILL) }},
}

// interruptRun is the run TestInterruptResumeEqualsUninterrupted
// interrupts some 100 times: shortRun's batch and nearly as many
// refreshes (each a progress line to interrupt it at, every other one a
// checkpoint) in half its steps, which are no part of the point.
var interruptRun = []string{"--set", "finetune.steps=150", "--set", "finetune.refresh=15", "--set", "finetune.checkpoint_every=2",
	"--set", "finetune.batch=32", "--set", "record.plots=false"}

var replayRe = regexp.MustCompile(`(?m)^replay (\S+) is identical to `)

// interrupted is what one interrupted process left.
type interrupted struct {
	id       string
	code     int
	finished bool // the process ended on its own before the interruption
	anchor   string
}

// interruptProcess starts selmix with args (a run or a resume that serves
// its socket and prints progress), waits for a random one of its progress
// lines — the start, a refresh, or, with control, the acknowledgement of a
// control sent over the socket at a random refresh — plus a random few ms,
// and interrupts it.
func interruptProcess(t *testing.T, how interruption, rng *rand.Rand, root string, control bool, args ...string) interrupted {
	t.Helper()
	cmd, sc := selmixtest.Start(t, nil, args...)
	var out selmixtest.Output
	var res interrupted
	// Progress lines: the start, then a refresh every 15 steps; the last
	// ones leave too little time to land the interruption before the end.
	anchor := rng.IntN(1 + 120/15)
	delay := time.Duration(rng.IntN(40)) * time.Millisecond
	sendAt := -1
	if control {
		sendAt = 1 + rng.IntN(105/15)
		anchor = -1 // the control's acknowledgement
		delay = time.Duration(rng.IntN(4)) * time.Millisecond
	}
	seen := -1
	for sc.Scan() {
		line := sc.Text()
		out.Add(line)
		isProgress := strings.HasPrefix(line, "run ") || strings.HasPrefix(line, "resuming run ") ||
			(strings.HasPrefix(line, "step ") && !strings.Contains(line, " control "))
		if isProgress {
			seen++
			if seen == anchor {
				res.anchor = line
				break
			}
			if seen == sendAt {
				cl, err := live.DialWait(context.Background(), filepath.Join(root, out.ID), live.Hello{})
				if err != nil {
					t.Fatalf("dial run %s: %v", out.ID, err)
				}
				cl.Send(loop.Control{Op: loop.OpSet, Key: "s", Value: fmt.Sprint(2 + rng.IntN(20))})
				defer cl.Close()
			}
		}
		if control && strings.Contains(line, " control set s=") {
			res.anchor = line
			break
		}
	}
	res.id = out.ID
	time.Sleep(delay)
	if res.id != "" {
		how.do(t, cmd, root, res.id)
	} else {
		cmd.Process.Kill()
	}
	selmixtest.Drain(sc)
	err := cmd.Wait()
	res.code = 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		res.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	res.finished = res.code == 0
	if res.code != 0 && res.code != how.code {
		t.Errorf("%s interrupted at %q: exit code %d, want %d\n%s", how.name, res.anchor, res.code, how.code, out.String())
	}
	return res
}

// Interrupt the real binary at random points of a run — in steps,
// refreshes, checkpoint writes, right after a control — by SIGINT, SIGTERM,
// `selmix stop` and SIGKILL, 12 times each; some resumed runs are
// interrupted again. Every time the run opens, and resumes to exactly what
// an uninterrupted run logs and concludes, byte for byte; replay agrees.
func TestInterruptResumeEqualsUninterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary many times")
	}
	t.Parallel()
	sharedRoot, sharedID := sharedRun(t, "interruptRun", interruptRun)
	root := livetest.ShortDir(t) // it holds the control sockets
	want := runstest.ReadOutcome(t, sharedRoot, sharedID)

	const trials = 12
	for ki, how := range interruptions {
		t.Run(how.name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(7, uint64(ki)))
			var interruptedN, twice, controls, replays, finished int
			for trial := range trials {
				control := trial%4 == 1
				again := trial%4 == 2
				first := interruptProcess(t, how, rng, root, control,
					append([]string{"run", "--headless", "--serve", "--runs", root}, interruptRun...)...)
				if first.id == "" {
					t.Fatalf("trial %d: interrupted before the run existed", trial)
				}
				if first.finished {
					finished++
				}
				id := first.id
				r, err := runs.Open(root, id)
				if err != nil {
					t.Fatalf("trial %d: interrupted run %s does not open: %v", trial, id, err)
				}
				if st := r.EffectiveStatus(); !first.finished {
					interruptedN++
					wantSt := runs.StatusStopped
					if how.code < 0 {
						wantSt = runs.StatusCrashed
					}
					if st != wantSt {
						t.Errorf("trial %d: status %s after %s, want %s", trial, st, how.name, wantSt)
					}
				}
				if again && !first.finished {
					second := interruptProcess(t, how, rng, root, false, "resume", "--serve", "--runs", root, id)
					if !second.finished {
						twice++
					}
				}
				if r, _ := runs.Open(root, id); r.EffectiveStatus() != runs.StatusFinished {
					selmixtest.Run(t, "resume", "-q", "--runs", root, id)
				}
				// Not even a killed process's socket outlives the run.
				if _, err := os.Stat(filepath.Join(root, id, live.SocketName)); err == nil {
					t.Errorf("trial %d: %s left in the finished run", trial, live.SocketName)
				}
				got := runstest.ReadOutcome(t, root, id)
				ref := want
				if control || trial%5 == 0 {
					rep := selmixtest.Run(t, "replay", "--runs", root, id)
					rm := replayRe.FindStringSubmatch(rep)
					if rm == nil {
						t.Fatalf("trial %d: replay of %s did not report identity:\n%s", trial, id, rep)
					}
					replays++
					if control {
						// The control landed at a step only the log knows: the
						// uninterrupted run is the replay of that log.
						ref = runstest.ReadOutcome(t, root, rm[1])
						controls++
					}
				}
				runstest.SameOutcome(t, fmt.Sprintf("trial %d (%s at %q)", trial, how.name, first.anchor), got, ref)
			}
			t.Logf("%d trials: %d interrupted (%d with a control just before), %d interrupted again after resuming, %d replays, %d finished before the interruption",
				trials, interruptedN, controls, twice, replays, finished)
			if finished > 0 {
				t.Errorf("%d interruptions came after the end: every one must interrupt a run", finished)
			}
		})
	}
}

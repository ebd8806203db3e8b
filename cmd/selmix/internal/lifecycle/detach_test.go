package lifecycle

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"selmix/cmd/selmix/internal/selmixtest"
	"selmix/core/loop"
	"selmix/runs"
	"selmix/runs/live"
	"selmix/runs/live/livetest"
	"selmix/runs/record"
)

var detachedRe = regexp.MustCompile(`run (\S+) started in the background \(pid (\d+)\)`)

// startDetached starts a background run of the real binary and returns its
// id. The runs root must be short: it holds the control socket.
func startDetached(t *testing.T, root string, extra ...string) string {
	id, _ := startDetachedPid(t, root, extra...)
	return id
}

func startDetachedPid(t *testing.T, root string, extra ...string) (string, int) {
	t.Helper()
	out := selmixtest.Run(t, append([]string{"run", "--detach", "--runs", root}, extra...)...)
	m := detachedRe.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no run id in:\n%s", out)
	}
	pid, _ := strconv.Atoi(m[2])
	return m[1], pid
}

// A run whose process dies shows in ps as crashed, and resume finishes it.
func TestDetachedCrashShowsInPs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	root := livetest.ShortDir(t)
	// Killed at its first refresh; resume then trains the rest: 600 steps
	// of batch 32 leave the kill ample time and the resume little work.
	id, pid := startDetachedPid(t, root, "--set", "finetune.steps=600", "--set", "finetune.refresh=25", "--set", "finetune.batch=32")
	r, err := runs.Open(root, id)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := live.DialWait(context.Background(), r.Dir, live.Hello{}) // wait until it trains
	if err != nil {
		t.Fatal(err)
	}
	for s, ok := cl.Next(context.Background()); ok && s.Kind != loop.KindRefresh; s, ok = cl.Next(context.Background()) {
	}
	cl.Close()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	var ps string
	for time.Now().Before(deadline) {
		if ps = selmixtest.Run(t, "ps", "--runs", root); strings.Contains(ps, id) && strings.Contains(ps, runs.StatusCrashed) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(ps, runs.StatusCrashed) {
		t.Fatalf("ps after the run's process died:\n%s", ps)
	}
	sock := filepath.Join(r.Dir, live.SocketName)
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("kill -9 left no socket to clean up (%v): the test no longer tests that", err)
	}
	selmixtest.Run(t, "resume", "-q", "--runs", root, id)
	if r, _ := runs.Open(root, id); r.EffectiveStatus() != runs.StatusFinished {
		t.Errorf("after resume: status %s, want finished", r.EffectiveStatus())
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dead process's control socket is still there after resume: %v", err)
	}
}

// waitEnded waits until the run has no live process and returns it.
func waitEnded(t *testing.T, root, id string, limit time.Duration) *runs.Run {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		r, err := runs.Open(root, id)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Live && r.Meta.Status != runs.StatusRunning {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s still live after %v (status %s)", id, limit, r.Meta.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A client killed with SIGKILL or SIGHUP does not take the run with it:
// the run goes on to the end and its event log is complete.
func TestDetachedSurvivesClients(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	root := livetest.ShortDir(t)
	id := startDetached(t, root, "--set", "finetune.steps=600", "--set", "finetune.refresh=25")
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGHUP} {
		cmd, sc := selmixtest.Start(t, nil, "attach", "--follow", "--runs", root, id)
		// Wait until it has followed at least one refresh, then kill it.
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "step ") {
				break
			}
		}
		cmd.Process.Signal(sig)
		cmd.Wait()
	}
	r := waitEnded(t, root, id, 2*time.Minute)
	if st := r.EffectiveStatus(); st != runs.StatusFinished {
		t.Fatalf("run ended %s, want finished", st)
	}
	h, err := record.Load(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Warnings) > 0 {
		t.Errorf("log warnings: %v", h.Warnings)
	}
	if got, want := len(h.Refreshes), 600/25+1; got != want || h.Final == nil {
		t.Errorf("log has %d refreshes (final %v), want %d and a final summary", got, h.Final != nil, want)
	}
	if _, err := os.Stat(filepath.Join(r.Dir, live.SocketName)); !os.IsNotExist(err) {
		t.Errorf("control socket left after the run ended: %v", err)
	}
}

// Two clients attached: a control sent by one is seen by both at the same
// step. A client that attaches mid-run and rebuilds from the log sees the
// same refreshes as one that followed from the start. stop ends the run
// cleanly.
func TestAttachTwoClientsAndReplay(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	root := livetest.ShortDir(t)
	id := startDetached(t, root, "--set", "finetune.steps=100000", "--set", "finetune.refresh=25")
	r, err := runs.Open(root, id)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, err := live.DialWait(context.Background(), r.Dir, live.Hello{Matrices: true}) // as the workbench: with G and P
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	// a follows from the start: the log holds what came before it.
	h0, err := record.Load(r)
	if err != nil {
		t.Fatal(err)
	}
	aSeen := map[int]loop.Refresh{}
	for _, x := range h0.Refreshes {
		aSeen[x.Step] = x.Stats
	}
	next := func(cl *live.Client, want func(loop.Snapshot) bool) loop.Snapshot {
		t.Helper()
		for {
			s, ok := cl.Next(ctx)
			if !ok {
				t.Fatalf("stream ended early: %v", cl.Err())
			}
			if s.Kind == loop.KindRefresh && cl == a {
				if s.Refresh.G == nil || len(s.Refresh.P) != s.Refresh.K*s.Refresh.K {
					t.Fatalf("the client that asked for matrices got a refresh without them")
				}
				aSeen[s.Step] = *s.Refresh
			}
			if s.Refresh != nil && cl != a && s.Refresh.G != nil {
				t.Fatalf("the client that did not ask for matrices got them")
			}
			if want(s) {
				return s
			}
		}
	}
	isRefresh := func(s loop.Snapshot) bool { return s.Kind == loop.KindRefresh }
	next(a, isRefresh)
	next(a, isRefresh)

	b, err := live.DialWait(context.Background(), r.Dir, live.Hello{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.Send(loop.Control{Op: loop.OpSet, Key: "s", Value: "7"})
	isAck := func(s loop.Snapshot) bool {
		return s.Kind == loop.KindControl && s.Ack != nil && s.Ack.Control.Key == "s"
	}
	ackB := next(b, isAck)
	ackA := next(a, isAck)
	if ackA.Ack.Step != ackB.Ack.Step || ackA.Ack.Err != "" {
		t.Errorf("clients saw the control at steps %d and %d (err %q), want the same step", ackA.Ack.Step, ackB.Ack.Step, ackA.Ack.Err)
	}
	last := next(a, isRefresh)
	for last.Refresh.S != 7 {
		last = next(a, isRefresh)
	}

	// A late viewer: its history from the log must equal what a saw live.
	// The log may lag the stream (under load, by a refresh): wait until it
	// holds the last refresh a saw.
	var h *record.History
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if h, err = record.Load(r); err != nil {
			t.Fatal(err)
		}
		if n := len(h.Refreshes); n > 0 && h.Refreshes[n-1].Step >= last.Step {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log does not reach step %d, the last refresh seen live, within a minute", last.Step)
		}
	}
	checked := 0
	for i, x := range h.Refreshes {
		if got, ok := aSeen[x.Step]; ok && got.G != nil {
			checked++
			// Both sides hold G and P as float32.
			if x.Stats.G, x.Stats.P, err = h.Matrices(i); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, x.Stats) {
				t.Errorf("refresh at step %d: log differs from the live snapshot", x.Step)
			}
		}
	}
	if checked < 3 {
		t.Errorf("only %d refreshes compared", checked)
	}

	out := selmixtest.Run(t, "stop", "--runs", root, id)
	if !strings.Contains(out, "stopped at step") {
		t.Errorf("stop printed %q", out)
	}
	ended := waitEnded(t, root, id, time.Minute)
	if st := ended.EffectiveStatus(); st != runs.StatusStopped {
		t.Errorf("status after stop = %s, want stopped", st)
	}
	ps := selmixtest.Run(t, "ps", "--runs", root)
	if strings.Contains(ps, id) {
		t.Errorf("ps lists the stopped run:\n%s", ps)
	}
}

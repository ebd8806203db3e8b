package worker_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"selmix/core/train"
	"selmix/core/worker"
)

// cancelAt returns a Log function that cancels when the worker has
// written line for the nth time, and the context it cancels.
func cancelAt(line string, n int) (context.Context, func(string)) {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	seen := 0
	return ctx, func(l string) {
		mu.Lock()
		defer mu.Unlock()
		if l == line {
			if seen++; seen == n {
				cancel()
			}
		}
	}
}

// A worker that hangs in a request is stopped StopGrace after the context
// ends, and the run ends as stopped (train.Halted), not failed: in train,
// and in hello (a worker pre-training), where Start fails the same way.
func TestWorkerInterruptedWhileHung(t *testing.T) {
	t.Run("train", func(t *testing.T) {
		ctx, log := cancelAt("fake worker: train", 2)
		c, err := fakeCtx(t, ctx, "hang-train=2", worker.Options{Timeout: time.Minute, StopGrace: 200 * time.Millisecond, Log: log})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		e := newEngine(t, toyConfig(), c)
		start := time.Now()
		sum, err := e.Run(ctx)
		took := time.Since(start)
		var h *train.Halted
		if !errors.As(err, &h) || !errors.Is(err, context.Canceled) || sum != nil {
			t.Fatalf("Run: %v, want a train.Halted wrapping context.Canceled", err)
		}
		checkMsg(t, err, []string{"did not answer \"train\" within 200ms of the stop; stopped it"})
		t.Logf("the hung run ended %v after it started: %v", took, err)
	})
	t.Run("hello", func(t *testing.T) {
		ctx, log := cancelAt("fake worker: hello", 1)
		c, err := fakeCtx(t, ctx, "hang-hello", worker.Options{StartTimeout: time.Minute, StopGrace: 200 * time.Millisecond, Log: log})
		if err == nil {
			c.Close()
			t.Fatal("started")
		}
		if !errors.Is(err, train.ErrHalt) || !errors.Is(err, context.Canceled) {
			t.Errorf("Start: %v, want an error wrapping train.ErrHalt and context.Canceled", err)
		}
		checkMsg(t, err, []string{"did not answer \"hello\""})
	})
}

// After the context ends, a worker that answers is not cut short: the
// engine's stop (an evaluation and a checkpoint) goes through.
func TestWorkerStopsCleanlyWhenItAnswers(t *testing.T) {
	ctx, log := cancelAt("fake worker: train", 2)
	c, err := fakeCtx(t, ctx, "ok", worker.Options{Timeout: time.Minute, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e := newEngine(t, toyConfig(), c)
	var saved bool
	e.SetCheckpointer(100, func(step int, b []byte, final bool) error { saved = true; return nil })
	sum, err := e.Run(ctx)
	var h *train.Halted
	if !errors.Is(err, train.ErrStopped) || errors.As(err, &h) || sum == nil || !saved {
		t.Fatalf("Run: %v (summary %v, stop checkpoint %v), want a clean stop", err, sum != nil, saved)
	}
}

// A worker killed by SIGKILL (as the kernel's out-of-memory killer does)
// and a worker that answers ReasonOutOfMemory halt the run, naming the
// likely cause and what bounds memory.
func TestWorkerOutOfMemory(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want []string
	}{
		{"sigkill=2", []string{"exited during \"train\" (killed by SIGKILL (out of memory?))", "lower finetune.batch", "--eval-batch", "--image-size", "killing itself"}},
		{"oom=2", []string{"worker ran out of memory in \"train\": CUDA out of memory. Tried to allocate 2.00 GiB", "lower finetune.batch"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			c, err := fake(t, tc.mode, 1, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, err = newEngine(t, toyConfig(), c).Run(context.Background())
			var h *train.Halted
			if !errors.As(err, &h) || !errors.Is(err, worker.ErrOutOfMemory) {
				t.Fatalf("Run: %v, want a train.Halted wrapping worker.ErrOutOfMemory", err)
			}
			checkMsg(t, err, tc.want)
			if strings.Contains(err.Error(), "killed by killed") {
				t.Errorf("%v", err)
			}
		})
	}
}

// A worker that exits while a child of it still holds its stdout and
// stderr is noticed when it exits, not when worker.timeout runs out.
func TestWorkerExitWithLingeringChild(t *testing.T) {
	c, err := fake(t, "orphan=2", 1, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_, err = newEngine(t, toyConfig(), c).Run(context.Background())
	if err == nil {
		t.Fatal("the run did not fail")
	}
	checkMsg(t, err, []string{"exited during \"train\" (exit status 3)", "leaving a child"})
	t.Logf("noticed after %v: %v", time.Since(start), err)
}

// The hello's own timeout is named when it is the one that ran out.
func TestWorkerHelloTimeoutNamed(t *testing.T) {
	c, err := fakeCtx(t, context.Background(), "hang-hello", worker.Options{StartTimeout: 300 * time.Millisecond})
	if err == nil {
		c.Close()
		t.Fatal("started")
	}
	checkMsg(t, err, []string{"did not answer \"hello\" within 300ms (worker.start_timeout)"})
}

// A stderr line of 2 MiB is cut, and the worker goes on writing (before,
// the pipe closed and the next write killed it).
func TestWorkerLongStderrLine(t *testing.T) {
	var mu sync.Mutex
	var got []string
	c, err := fakeCtx(t, context.Background(), "longline", worker.Options{Timeout: time.Minute, Log: func(l string) {
		mu.Lock()
		got = append(got, l)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Evaluate(train.SplitVal, false); err != nil {
		t.Fatal(err)
	}
	c.Close()
	mu.Lock()
	defer mu.Unlock()
	wantCut := strings.Repeat("x", worker.MaxLine) + " … [cut 2031616 bytes]"
	want := []string{"fake worker: hello", wantCut, "fake worker: evaluate", "fake worker: bye"}
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %.80q… (%d bytes), want %.80q… (%d bytes)", i, got[i], len(got[i]), want[i], len(want[i]))
		}
	}
}

// A missing command or working directory is the configuration's fault
// (ErrStart), said in one line naming the key.
func TestWorkerCannotStart(t *testing.T) {
	for _, tc := range []struct {
		o    worker.Options
		want string
	}{
		{worker.Options{Command: []string{"/nonexistent/selmix-worker"}}, `worker.command: starting /nonexistent/selmix-worker: no such file`},
		{worker.Options{Command: []string{"selmix-no-such-worker"}}, `worker.command: starting selmix-no-such-worker: not found in $PATH`},
		{worker.Options{Command: []string{"true"}, Dir: "/nonexistent"}, `worker.dir "/nonexistent": no such directory`},
		{worker.Options{Command: []string{"true"}, Dir: "/etc/passwd"}, `worker.dir "/etc/passwd": not a directory`},
	} {
		c, err := worker.Start(context.Background(), tc.o)
		if err == nil {
			c.Close()
			t.Fatalf("%v started", tc.o)
		}
		if !errors.Is(err, worker.ErrStart) || err.Error() != tc.want {
			t.Errorf("%v: %v, want %q wrapping ErrStart", tc.o, err, tc.want)
		}
	}
}

// A worker that refuses its own input in hello (ReasonBadInput) is a
// configuration error, like one that cannot start: ErrBadInput, in one line
// naming what the worker named.
func TestWorkerBadInput(t *testing.T) {
	c, err := fake(t, "bad-input", 1, time.Minute)
	if err == nil {
		c.Close()
		t.Fatal("a worker refusing its input started")
	}
	const want = "worker: hello: --root /data/x: no such folder"
	if !errors.Is(err, worker.ErrBadInput) || err.Error() != want {
		t.Errorf("Start: %v, want %q wrapping ErrBadInput", err, want)
	}
}

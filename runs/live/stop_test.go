package live

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"selmix/runs"
	"selmix/runs/live/livetest"
)

// heldRun is a run whose process holds its lock (runs.IsLive is true), as
// a live run's does, with no socket yet.
func heldRun(t *testing.T) *runs.Run {
	t.Helper()
	root := livetest.ShortDir(t)
	w, err := runs.Create(root, "held", "seed = 1\n", runs.Meta{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	r, err := runs.Open(root, "held")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// mute listens on r's socket and takes every connection without a word,
// as a process stopped by SIGSTOP does (the kernel accepts for it); send,
// if not nil, is written to each connection first.
func mute(t *testing.T, r *runs.Run, send []byte) {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(r.Dir, SocketName))
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(r.Dir, SocketName), 0o600)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if send != nil {
				c.Write(send)
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
}

// setWaits shortens the deadlines of the waits on a peer for a test.
func setWaits(t *testing.T, hello, socket, idle time.Duration) {
	h, s, i := helloTimeout, socketWait, stopIdle
	helloTimeout, socketWait, stopIdle = hello, socket, idle
	t.Cleanup(func() { helloTimeout, socketWait, stopIdle = h, s, i })
}

// selmix stop waited forever on a run that accepts and never says hello
// (stopped by SIGSTOP): every wait now has a deadline, and says the run
// does not answer; the same wait ends at once with its context (a signal).
func TestStopRunThatDoesNotAnswer(t *testing.T) {
	r := heldRun(t)
	mute(t, r, nil)
	setWaits(t, 200*time.Millisecond, time.Hour, time.Hour)
	var out bytes.Buffer
	err := Stop(context.Background(), &out, r)
	if !errors.Is(err, ErrNoAnswer) || !strings.Contains(err.Error(), "no hello within 200ms") || !strings.Contains(err.Error(), "kill -TERM") {
		t.Errorf("error %v, want ErrNoAnswer: no hello, naming the process", err)
	}

	setWaits(t, time.Hour, time.Hour, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	if err := Stop(ctx, &out, r); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled while waiting for the hello: error %v, want context.Canceled", err)
	}
}

// After its hello, a run silent past the bound does not answer either.
func TestStopRunSilentAfterHello(t *testing.T) {
	r := heldRun(t)
	mute(t, r, []byte(`{"hello":{"version":2}}`+"\n"))
	setWaits(t, time.Hour, time.Hour, 200*time.Millisecond)
	err := Stop(context.Background(), new(bytes.Buffer), r)
	if !errors.Is(err, ErrNoAnswer) || !strings.Contains(err.Error(), "silent for 200ms") {
		t.Errorf("error %v, want ErrNoAnswer: silent", err)
	}
}

// A live run whose control.sock was moved away: stop said nothing for
// 10 s and exited 0 while the run went on. It is an error naming the
// process, and the wait for the socket ends with the context too.
func TestStopRunWithoutSocket(t *testing.T) {
	r := heldRun(t)
	setWaits(t, time.Hour, 200*time.Millisecond, time.Hour)
	var out bytes.Buffer
	err := Stop(context.Background(), &out, r)
	if !errors.Is(err, ErrNoAnswer) || !strings.Contains(err.Error(), "serves no control socket") || out.Len() != 0 {
		t.Errorf("error %v, output %q; want ErrNoAnswer: no control socket", err, out.String())
	}
	setWaits(t, time.Hour, time.Hour, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	if _, err := DialWait(ctx, r.Dir, Hello{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled while waiting for the socket: error %v, want context.Canceled", err)
	}
}

// attach --follow read a 1 GiB line into memory (568 MB when it was
// stopped) and exited 0 without a word: a line past the bound ends the
// stream with an error that says so.
func TestClientLineBound(t *testing.T) {
	r := heldRun(t)
	long := append([]byte(`{"hello":{"version":2}}`+"\n"+`{"snapshot":{"kind":"log","text":"`), bytes.Repeat([]byte("x"), maxLine+1)...)
	mute(t, r, long)
	cl, err := Dial(r.Dir, Hello{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, ok := cl.Next(context.Background()); ok || cl.Err() == nil || !strings.Contains(cl.Err().Error(), "the run sent a line longer than 16777216 bytes") {
		t.Errorf("Next: %v, error %v; want the line refused", ok, cl.Err())
	}
}

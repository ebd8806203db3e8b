package live

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"selmix/core/loop"
	"selmix/runs"
	"selmix/runs/record"
)

// The viewer's side of a run in another process: connecting while its
// socket comes up, its logged history followed by what is live, and
// stopping it.

// DialWait connects to the live run in dir, waiting briefly for its
// socket while its process lives: a run that was just created serves it a
// moment later. It ends with ctx. hello says what to send (the workbench
// asks for G and P, which it draws, and the statistics its what-if
// preview forecasts from). A run whose process holds its lock
// but serves no socket within the wait is an error that says so (its
// control.sock was moved or deleted), not ErrNotLive.
func DialWait(ctx context.Context, dir string, hello Hello) (*Client, error) {
	deadline := time.Now().Add(socketWait)
	for {
		cl, err := Dial(dir, hello)
		if err == nil || !errors.Is(err, ErrNotLive) {
			return cl, err
		}
		live, pid := runs.IsLive(dir)
		if !live {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s: process %d holds the run but serves no control socket at %s (moved or deleted?); kill -TERM %d stops it: %w",
				dir, pid, filepath.Join(dir, SocketName), pid, ErrNoAnswer)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// socketWait is how long DialWait waits for a live run's socket;
// stopIdle bounds the silence Stop waits through once the run has said
// hello (the run confirms each step it takes and its final checkpoint).
// Variables for tests.
var (
	socketWait = 10 * time.Second
	stopIdle   = 2 * time.Minute
)

// Stop asks the live run r to stop and waits until it confirms, saying
// how it ended on w. Every wait has a deadline and ends with ctx: a run
// that does not answer (stopped by SIGSTOP, hung, its socket gone) is an
// error wrapping ErrNoAnswer that names its process.
func Stop(ctx context.Context, w io.Writer, r *runs.Run) error {
	cl, err := DialWait(ctx, r.Dir, Hello{})
	if errors.Is(err, ErrNotLive) {
		if st, ok := endedStatus(ctx, r); ok {
			fmt.Fprintf(w, "run %s had already ended (%s)\n", r.Meta.ID, st)
		}
		return nil
	}
	if err != nil {
		return err
	}
	defer cl.Close()
	cl.SetIdle(stopIdle)
	cl.Send(loop.Control{Op: loop.OpStop})
	last, final := -1, false
	for {
		s, ok := cl.Next(ctx)
		if !ok {
			break
		}
		last = s.Step
		final = final || s.Kind == loop.KindFinal
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := cl.Err(); err != nil {
		if errors.Is(err, ErrNoAnswer) {
			return fmt.Errorf("run %s: %w%s", r.Meta.ID, err, processState(r))
		}
		return fmt.Errorf("run %s: %w", r.Meta.ID, err)
	}
	if !final {
		// A run that ended on its own as we connected closes the
		// connection without a word: its record says how it ended.
		if st, ok := endedStatus(ctx, r); ok {
			fmt.Fprintf(w, "run %s had already ended (%s)\n", r.Meta.ID, st)
			return nil
		}
		return fmt.Errorf("run %s: connection closed before the run confirmed it stopped (last step %d)", r.Meta.ID, last)
	}
	fmt.Fprintf(w, "run %s stopped at step %d\n", r.Meta.ID, last)
	return nil
}

// processState says what r's process is doing when it does not answer:
// stopped (kill -CONT brings it back), or only its pid.
func processState(r *runs.Run) string {
	live, pid := runs.IsLive(r.Dir)
	if !live || pid <= 0 {
		return ""
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if i := bytes.LastIndexByte(b, ')'); err == nil && i >= 0 && i+2 < len(b) && (b[i+2] == 'T' || b[i+2] == 't') {
		return fmt.Sprintf(" (its process %d is stopped: kill -CONT %d resumes it, kill -TERM %d then stops it)", pid, pid, pid)
	}
	return fmt.Sprintf(" (process %d; kill -TERM %d stops it)", pid, pid)
}

// endedStatus waits a little for r's process to let go of it and returns
// its recorded status once it has.
func endedStatus(ctx context.Context, r *runs.Run) (string, bool) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		now, err := runs.Open(filepath.Dir(r.Dir), r.Meta.ID)
		if err != nil {
			return "", false
		}
		if !now.Live {
			st := now.EffectiveStatus()
			return st, st != runs.StatusRunning
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "", false
}

// ReplayThenFollow is a stream of the run's logged history followed by the
// live snapshots that are newer than it.
func ReplayThenFollow(ctx context.Context, h *record.History, cl *Client) *loop.Stream {
	st := loop.NewStream()
	lastRefresh, lastCtl, atLast := -1, -1, 0
	for _, s := range record.Snapshots(h) {
		st.Publish(s)
		switch {
		case s.Kind == loop.KindRefresh:
			lastRefresh = s.Step
		case s.Kind == loop.KindControl && s.Step == lastCtl:
			atLast++
		case s.Kind == loop.KindControl:
			lastCtl, atLast = s.Step, 1
		}
	}
	go func() {
		defer st.Close()
		for {
			s, ok := cl.Next(ctx)
			if !ok {
				if err := cl.Err(); err != nil {
					st.Publish(loop.Snapshot{Kind: loop.KindError, State: loop.Failed, Err: err.Error()})
				}
				return
			}
			switch {
			case s.Kind == loop.KindRefresh && s.Step <= lastRefresh:
				continue
			case s.Kind == loop.KindControl && s.Step < lastCtl:
				continue
			case s.Kind == loop.KindControl && s.Step == lastCtl && atLast > 0:
				atLast-- // logged already
				continue
			}
			st.Publish(s)
		}
	}()
	return st
}

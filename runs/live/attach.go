package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"selmix/core/train"
	"selmix/runs"
	"selmix/runs/record"
)

// The viewer's side of a run in another process: connecting while its
// socket comes up, its logged history followed by what is live, and
// stopping it.

// DialWait connects to the live run in dir, waiting briefly for its
// socket: a run that was just created serves it a moment later. matrices
// asks for G and P with every refresh (the workbench draws them).
func DialWait(dir string, matrices bool) (*Client, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		cl, err := Dial(dir, Hello{Matrices: matrices})
		if err == nil || !errors.Is(err, ErrNotLive) || time.Now().After(deadline) {
			return cl, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop asks the live run r to stop and waits until it confirms, saying
// how it ended on w.
func Stop(ctx context.Context, w io.Writer, r *runs.Run) error {
	cl, err := DialWait(r.Dir, false)
	if errors.Is(err, ErrNotLive) {
		return nil // it ended meanwhile
	}
	if err != nil {
		return err
	}
	defer cl.Close()
	cl.Send(train.Control{Op: train.OpStop})
	last, final := -1, false
	for {
		s, ok := cl.Next(ctx)
		if !ok {
			break
		}
		last = s.Step
		final = final || s.Kind == train.KindFinal
	}
	if !final {
		// A run that ended on its own as we connected closes the
		// connection without a word: its record says how it ended.
		if st, ok := endedStatus(r); ok {
			fmt.Fprintf(w, "run %s had already ended (%s)\n", r.Meta.ID, st)
			return nil
		}
		return fmt.Errorf("run %s: connection closed before the run confirmed it stopped (last step %d)", r.Meta.ID, last)
	}
	fmt.Fprintf(w, "run %s stopped at step %d\n", r.Meta.ID, last)
	return nil
}

// endedStatus waits a little for r's process to let go of it and returns
// its recorded status once it has.
func endedStatus(r *runs.Run) (string, bool) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
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
func ReplayThenFollow(ctx context.Context, h *record.History, cl *Client) *train.Stream {
	st := train.NewStream()
	lastRefresh, lastCtl, atLast := -1, -1, 0
	for _, s := range record.Snapshots(h) {
		st.Publish(s)
		switch {
		case s.Kind == train.KindRefresh:
			lastRefresh = s.Step
		case s.Kind == train.KindControl && s.Step == lastCtl:
			atLast++
		case s.Kind == train.KindControl:
			lastCtl, atLast = s.Step, 1
		}
	}
	go func() {
		defer st.Close()
		for {
			s, ok := cl.Next(ctx)
			if !ok {
				if err := cl.Err(); err != nil {
					st.Publish(train.Snapshot{Kind: train.KindError, State: train.Failed, Err: err.Error()})
				}
				return
			}
			switch {
			case s.Kind == train.KindRefresh && s.Step <= lastRefresh:
				continue
			case s.Kind == train.KindControl && s.Step < lastCtl:
				continue
			case s.Kind == train.KindControl && s.Step == lastCtl && atLast > 0:
				atLast-- // logged already
				continue
			}
			st.Publish(s)
		}
	}()
	return st
}

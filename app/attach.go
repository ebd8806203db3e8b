package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"selmix/core/train"
	"selmix/runs"
	"selmix/runs/live"
	"selmix/runs/record"
)

// LiveRun finds the run to attach to: run id of root, else (id "") the
// most recently started live run.
func LiveRun(root, id string) (*runs.Run, error) {
	if id != "" {
		r, err := OpenRun(root, id)
		if err != nil {
			return nil, err
		}
		if !r.Live {
			return nil, BadInput("run %s is not live (status %s)%s", r.Meta.ID, r.EffectiveStatus(), resumeHint(r))
		}
		return r, nil
	}
	all, err := runs.List(root)
	if err != nil {
		return nil, err
	}
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].Live {
			return &all[i], nil
		}
	}
	return nil, BadInput("no live run in %s (selmix ps lists runs; selmix run --detach starts one)", root)
}

func resumeHint(r *runs.Run) string {
	if r.EffectiveStatus() == runs.StatusCrashed || r.EffectiveStatus() == runs.StatusStopped {
		return "; `selmix resume " + r.Meta.ID + "` continues it"
	}
	return ""
}

// DialLive connects to a live run, waiting briefly for its socket: a run
// that was just created serves it a moment later. matrices asks for G and
// P with every refresh (the workbench draws them).
func DialLive(r *runs.Run, matrices bool) (*live.Client, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		cl, err := live.Dial(r.Dir, live.Hello{Matrices: matrices})
		if err == nil || !errors.Is(err, live.ErrNotLive) || time.Now().After(deadline) {
			return cl, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// StopLive asks a live run to stop and waits until it confirms.
func StopLive(ctx context.Context, w io.Writer, r *runs.Run) error {
	cl, err := DialLive(r, false)
	if errors.Is(err, live.ErrNotLive) {
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
func ReplayThenFollow(ctx context.Context, h *record.History, cl *live.Client) *train.Stream {
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

package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"

	"selmix/core/blas"
	"selmix/core/loop"
	"selmix/core/train"
	"selmix/core/worker"
	"selmix/runs"
	"selmix/runs/live"
	"selmix/runs/record"
)

// Resume continues run id of the runs root in place from its last valid
// checkpoint (from step 0 when it has none), re-sending the controls
// acknowledged after it. A run stopped early again returns a
// *StoppedError.
func (s *Session) Resume(ctx context.Context, id string) error {
	w, root := s.Out, s.root()
	ctx, sig := withSignals(ctx)
	defer sig.stop()
	r, err := OpenRun(root, id)
	if err != nil {
		return err
	}
	if r.Live {
		return BadInput("run %s is live (pid %d): it is still running", r.Meta.ID, r.Pid)
	}
	// The log, not run.json, says whether the run ended: a run whose final
	// event is missing (say, a torn last line) is resumed, and resuming
	// writes that event again.
	h, err := record.Load(r)
	if err != nil {
		return err
	}
	UseRunBLAS(w, r.Meta)
	if h.Final != nil {
		return BadInput("run %s has finished; fork it to train further (selmix fork %s --set finetune.steps=N)", r.Meta.ID, r.Meta.ID)
	}
	c, err := RunConfig(r)
	if err != nil {
		return err
	}
	// A checkpoint the engine or the worker refuses for its content (one
	// that passed the checks of its file) is passed over like damage: the
	// one before it is tried, down to starting over.
	var eng *train.Engine
	var step int
	for limit := math.MaxInt; ; {
		var state []byte
		step, state, err = 0, nil, runs.ErrNoCheckpoint
		if limit >= 0 {
			step, state, err = checkpointAt(w, r, Checkpoint{Step: limit})
		}
		switch {
		case errors.Is(err, runs.ErrNoCheckpoint):
		case errors.Is(err, runs.ErrDamaged):
			fmt.Fprintf(w, "%v: starting over from step 0\n", err)
		case err != nil:
			return err
		}
		if state == nil {
			// Crashed before its first (valid) checkpoint: start over; the
			// events it logged are reproduced exactly and not written twice.
			step = 0
			eng, err = s.fresh(sig, c)
			break
		}
		eng, err = s.restored(sig, c, state, func(err error) error {
			return fmt.Errorf("%s: checkpoint at step %d: %w", r.Dir, step, err)
		})
		if (errors.Is(err, train.ErrCheckpoint) || errors.Is(err, worker.ErrBadState)) && sig.caught() == nil {
			fmt.Fprintf(w, "refused checkpoint (%v): using an earlier one\n", err)
			limit = step - 1
			continue
		}
		break
	}
	if err != nil {
		return err
	}
	defer eng.Trainer().Close()
	rec, err := record.Reopen(root, r.Meta.ID)
	if err != nil {
		return err
	}
	if !s.Serve {
		// A socket left by a process that died serves nobody; we hold the
		// run's lock, so no live process owns it.
		os.Remove(filepath.Join(r.Dir, live.SocketName))
	}
	resend(eng, h)
	if err := recordSession(w, rec, r.Meta, eng.Info()); err != nil {
		return err
	}
	fmt.Fprintf(w, "resuming run %s from step %d (%s)\n", r.Meta.ID, step, r.Dir)
	return s.execute(ctx, sig, eng, rec, c, step, true)
}

// resend sends again, at their steps, the controls h acknowledged after
// the checkpoint eng continues from: a resumed run takes them as the
// run did. One the checkpoint holds pending already (sent ahead with its
// step: a replay's, a scheduled one) is not sent twice: it would be
// applied and counted twice, and the count decides what the next resume
// re-sends.
func resend(eng *train.Engine, h *record.History) {
	acked := eng.Acked()
	pending := eng.Pending()
	for i, a := range h.Controls {
		if i < acked || a.Err != "" || a.Control.Op != loop.OpSet || a.Control.Auto() {
			continue
		}
		c := a.Control
		c.At = a.Step
		if j := slices.IndexFunc(pending, func(p loop.Control) bool {
			return p.Op == c.Op && p.Key == c.Key && p.Value == c.Value && p.At == c.At
		}); j >= 0 {
			pending = slices.Delete(pending, j, j+1)
			continue
		}
		eng.Send(c)
	}
}

// recordSession records in run.json what a resumed run's session runs
// on: the GPUs, world size and worker environment of its trainer, and
// its OpenBLAS kernel where that is not the run's (blas_core then lists
// both, and a replay compares within ReplayTolerance). It says in one
// line when the world size is not the one the run was saved with: the
// run goes on with the new one (its checkpoint is rank 0's state, which
// every rank loads).
func recordSession(w io.Writer, rec *record.Recorder, was runs.Meta, in train.Info) error {
	now, before := max(1, in.WorldSize), max(1, was.WorldSize)
	if now != before {
		ranks := "ranks"
		if now == 1 {
			ranks = "rank"
		}
		fmt.Fprintf(w, "world size %d, was %d when the run was saved: resuming with %d %s\n", now, before, now, ranks)
	}
	cores := was.BLASCore
	if was.BLAS == blas.Name && was.BLASThreads > 0 {
		cores = withKernel(cores)
	}
	if slices.Equal(in.GPUs, was.GPUs) && now == before && cores == was.BLASCore && maps.Equal(in.Env, was.WorkerEnv) {
		return nil
	}
	return rec.Writer().SetMeta(func(m *runs.Meta) {
		m.GPUs, m.WorldSize = slices.Clone(in.GPUs), in.WorldSize
		m.BLASCore, m.WorkerEnv = cores, maps.Clone(in.Env)
	})
}

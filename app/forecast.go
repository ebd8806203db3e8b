package app

import (
	"context"
	"fmt"
	"io"
	"math"

	"selmix/core/local"
	"selmix/core/train"
)

// Forecasts is the what-if preview of each of cands (finetune.key=value
// settings on top of those in force at the checkpoint) from run id's
// checkpoint at step: the change of ψ of the run's objective its linear
// model forecasts over the interval the checkpoint's last refresh opens
// (train.Preview), NaN where it forecasts none (a policy that does not
// mix). It restores the run's trainer (its worker, for a worker's run) to
// read that refresh's statistics and runs no step. A population's
// explore = forecast ranks its candidates by it (selmix sweep forecast).
func (s *Session) Forecasts(ctx context.Context, id string, step int, cands [][]string) ([]float64, error) {
	r, _, err := OpenHistory(s.root(), id)
	if err != nil {
		return nil, err
	}
	pc, err := RunConfig(r)
	if err != nil {
		return nil, err
	}
	got, state, err := checkpointAt(io.Discard, r, Checkpoint{Step: step})
	if err != nil {
		return nil, err
	}
	if got != step {
		return nil, fmt.Errorf("run %s has no checkpoint at step %d (its latest before is at step %d)", r.Meta.ID, step, got)
	}
	ck, err := local.ParseCheckpoint(state)
	if err != nil {
		return nil, err
	}
	tr, err := s.restore(ctx, pc, ck)
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	eng, err := train.Resume(pc.Train(), tr, ck)
	if err != nil {
		return nil, err
	}
	b := eng.Basis()
	if b == nil {
		return nil, fmt.Errorf("run %s at step %d: no refresh yet to forecast from", r.Meta.ID, step)
	}
	cur := ck.Hyper()
	out := make([]float64, len(cands))
	for i, sets := range cands {
		next, err := forkHyper(pc, cur, sets)
		if err != nil {
			return nil, fmt.Errorf("candidate %d: %w", i, err)
		}
		f, err := train.Preview(b, cur, next)
		if err != nil {
			return nil, fmt.Errorf("candidate %d: %w", i, err)
		}
		out[i] = math.NaN()
		if f.Next.OK {
			out[i] = f.Next.Delta
		}
	}
	return out, nil
}

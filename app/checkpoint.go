package app

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"selmix/core/local"
	"selmix/core/train"
	"selmix/runs"
)

// Checkpoint selects a run's checkpoint: the best one, or the one at or
// before Step (a negative Step: the latest).
type Checkpoint struct {
	Step int
	Best bool
}

// Latest selects a run's newest checkpoint.
var Latest = Checkpoint{Step: -1}

// ParseAt reads a checkpoint flag's value: a step ≥ 0, "best", or ""
// (the latest).
func ParseAt(flag, v string) (Checkpoint, error) {
	switch v {
	case "":
		return Latest, nil
	case "best":
		return Checkpoint{Best: true}, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return Checkpoint{}, BadInput("%s %q: want a step ≥ 0 or best (leave %s out for the latest checkpoint)", flag, v, flag)
	}
	return Checkpoint{Step: n}, nil
}

// checkpointCheck is what a checkpoint a run goes on from must pass: a
// header that declares the file's size (before it is read whole), then
// the whole of it decoded and its content checked.
var checkpointCheck = runs.CheckpointCheck{
	Head: train.CheckpointHead,
	Content: func(b []byte) error {
		_, err := local.ParseCheckpoint(b)
		return err
	},
}

// checkpointAt is r's checkpoint that at selects: its best, or its newest
// valid one at or before a step (a negative step: the latest). Damaged
// newer ones are passed over, and w is told so in one line naming each; a
// run with none there is an input error (wrapping runs.ErrNoBest,
// runs.ErrNoCheckpoint, or runs.ErrDamaged naming the damaged files).
func checkpointAt(w io.Writer, r *runs.Run, at Checkpoint) (int, []byte, error) {
	if at.Best {
		step, state, err := r.ValidBestCheckpoint(checkpointCheck)
		if errors.Is(err, runs.ErrNoBest) {
			return 0, nil, UsageError{err}
		}
		return step, state, err
	}
	step := at.Step
	if step < 0 {
		step = math.MaxInt
	}
	got, state, skipped, err := r.LatestValidCheckpoint(step, checkpointCheck)
	if errors.Is(err, runs.ErrNoCheckpoint) {
		return 0, nil, UsageError{err}
	}
	if err != nil {
		return 0, nil, err
	}
	if len(skipped) > 0 {
		msgs := make([]string, len(skipped))
		for i, s := range skipped {
			msgs[i] = s.String()
		}
		fmt.Fprintf(w, "damaged checkpoint %s: using the one at step %d\n", strings.Join(msgs, "; "), got)
	}
	return got, state, nil
}

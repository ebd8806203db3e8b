package worker

import (
	"errors"
	"testing"
)

// A worker that refuses a checkpoint's state (a zeroed state: resume
// exited 1) marks the error ErrBadState, so that resume passes the
// checkpoint over for the one before it, as it does a damaged file.
func TestLoadRefusalIsBadState(t *testing.T) {
	msg, no := "state is not a torch checkpoint", false
	err := refusal("load", status{OK: &no, Error: &msg})
	if !errors.Is(err, ErrBadState) || err.Error() != "worker: load: state is not a torch checkpoint" {
		t.Errorf("load refused: %v (ErrBadState: %v)", err, errors.Is(err, ErrBadState))
	}
	if err := refusal("train", status{OK: &no, Error: &msg}); errors.Is(err, ErrBadState) {
		t.Errorf("a train refusal is marked ErrBadState: %v", err)
	}
}

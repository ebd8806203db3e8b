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

// A worker's message that names the request itself is not prefixed with
// it again ("worker: train: train: loader process died").
func TestRefusalNamesTheRequestOnce(t *testing.T) {
	msg, no := "train: loader process died", false
	if got := refusal("train", status{OK: &no, Error: &msg}).Error(); got != "worker: train: loader process died" {
		t.Errorf("got %q", got)
	}
}

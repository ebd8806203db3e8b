package train

import (
	"encoding/json"
	"fmt"

	"selmix/core/loop"
	"selmix/core/metric"
)

// engineStateV2 is the JSON part of a version 2 checkpoint: a version 3
// one but for the fields whose own fields went by their Go names.
type engineStateV2 struct {
	engineState
	Pending    []loop.Control `json:"pending,omitempty"`
	ValBefore  metric.Report  `json:"val_before"`
	TestBefore metric.Report  `json:"test_before"`
	Best       *loop.Best     `json:"best,omitempty"`
}

// state is v2 in the version 3 form.
func (v2 *engineStateV2) state() engineState {
	st := v2.engineState
	st.Pending = controlStates(v2.Pending)
	st.ValBefore, st.TestBefore = reportState(v2.ValBefore), reportState(v2.TestBefore)
	st.Best = newBestState(v2.Best)
	return st
}

// engineStateV1 is the JSON part of a version 1 checkpoint.
type engineStateV1 struct {
	Version       int
	Step          int
	LastRefresh   int
	Refreshes     int
	Acks          int
	Loss          *float64
	Hyper         loop.Hyper
	Pending       []loop.Control
	RNG           []byte
	ValBefore     metric.Report
	TestBefore    metric.Report
	TestObjBefore []float64
}

// V1Trainer turns the model (an .npz archive) and sampler state of a
// version 1 checkpoint into the in-process trainer's state, with its head.
// The engine never reads a model: the trainer's package supplies it
// (local.ParseCheckpoint).
type V1Trainer func(model, rng []byte) (*Saved, error)

// parseV1 reads a version 1 checkpoint: always taken before a refresh (or
// at the end), so it carries no evaluation; its model and sampler become
// the in-process trainer's state (V1Trainer).
func parseV1(js, body []byte, readV1 V1Trainer) (*Checkpoint, error) {
	var v1 engineStateV1
	if err := json.Unmarshal(js, &v1); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCheckpoint, err)
	}
	if v1.Version != 1 {
		return nil, fmt.Errorf("%w: version %d in a version 1 file", ErrCheckpoint, v1.Version)
	}
	if readV1 == nil {
		return nil, fmt.Errorf("%w: a version 1 checkpoint holds an in-process model, which only the in-process trainer reads", ErrCheckpoint)
	}
	sv, err := readV1(body, v1.RNG)
	if err != nil {
		return nil, fmt.Errorf("checkpoint model: %w", err)
	}
	if len(sv.B) == 0 || len(sv.W)%len(sv.B) != 0 {
		return nil, fmt.Errorf("%w: a head of %d weights and %d biases", ErrCheckpoint, len(sv.W), len(sv.B))
	}
	st := engineState{
		Version: 1, Step: v1.Step, LastRefresh: v1.LastRefresh, Refreshes: v1.Refreshes, Acks: v1.Acks,
		Loss: v1.Loss, Hyper: v1.Hyper, Pending: controlStates(v1.Pending),
		ValBefore: reportState(v1.ValBefore), TestBefore: reportState(v1.TestBefore), TestObjBefore: v1.TestObjBefore,
		K: len(sv.B), D: len(sv.W) / len(sv.B), Trainer: sv.Format, TrainerLen: len(sv.State),
	}
	return &Checkpoint{Step: st.Step, K: st.K, D: st.D, st: st, Trainer: sv}, nil
}

package train

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"

	"selmix/core/data"
	"selmix/core/metric"
	"selmix/core/model"
)

// Checkpointer receives the engine's complete state: model, optimizer,
// sampler RNG, hyperparameters and schedule position. It runs in the
// engine's goroutine; final marks the end-of-run checkpoint.
type Checkpointer func(step int, state []byte, final bool) error

// SetCheckpointer asks for a checkpoint every `every` refreshes (taken at
// the refresh boundary, before the refresh) and one at the end. Call
// before Run.
func (e *Engine) SetCheckpointer(every int, f Checkpointer) {
	e.ckptEvery, e.ckpt = every, f
}

// engineState is the non-model part of a checkpoint.
type engineState struct {
	Version       int
	Step          int
	LastRefresh   int
	PauseAt       int
	Refreshes     int
	Acks          int
	Loss          *float64 // last step's loss; nil if none or not finite
	Paused        bool
	Batch         int
	Hyper         Hyper
	Pending       []Control
	RNG           []byte
	ValBefore     metric.Report
	TestBefore    metric.Report
	TestObjBefore []float64
}

const ckptMagic = "SELMIXCK"

func (e *Engine) checkpoint() error {
	final := e.state == Finished || e.state == Stopped
	if e.ckpt == nil || (!final && (e.ckptEvery <= 0 || e.refreshes == 0 || e.refreshes%e.ckptEvery != 0)) {
		return nil
	}
	b, err := e.MarshalState()
	if err != nil {
		return fmt.Errorf("checkpoint at step %d: %w", e.step, err)
	}
	if err := e.ckpt(e.step, b, final); err != nil {
		return fmt.Errorf("checkpoint at step %d: %w", e.step, err)
	}
	return nil
}

// MarshalState serialises the engine. Only call it from the goroutine
// running Run (or before/after Run).
func (e *Engine) MarshalState() ([]byte, error) {
	rng, err := e.src.MarshalBinary()
	if err != nil {
		return nil, err
	}
	var loss *float64
	if !math.IsNaN(e.loss) && !math.IsInf(e.loss, 0) {
		loss = &e.loss
	}
	st := engineState{
		Loss:    loss,
		Version: 1, Step: e.step, LastRefresh: e.lastRefresh, PauseAt: e.pauseAt, Refreshes: e.refreshes, Acks: e.acks,
		Paused: e.state == Paused, Batch: e.batch, Hyper: e.hyper, Pending: e.pending, RNG: rng,
		ValBefore: e.valBefore, TestBefore: e.testBefore, TestObjBefore: e.testObjBef,
	}
	js, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.WriteString(ckptMagic)
	binary.Write(&buf, binary.LittleEndian, uint32(len(js)))
	buf.Write(js)
	if err := e.net.Save(&buf); err != nil {
		return nil, err
	}
	binary.Write(&buf, binary.LittleEndian, crc32.ChecksumIEEE(buf.Bytes()))
	return buf.Bytes(), nil
}

// ErrCheckpoint reports a checkpoint that cannot be read.
var ErrCheckpoint = errors.New("not a valid selmix engine checkpoint")

// Resume rebuilds an engine from MarshalState's bytes: Run then continues
// exactly where the checkpoint was taken. cfg must be the run's
// configuration; the checkpoint's hyperparameters (with every control
// applied so far) replace cfg.Hyper.
func Resume(cfg Config, sp *data.Split, state []byte) (*Engine, error) {
	st, net, err := decodeState(state)
	if err != nil {
		return nil, err
	}
	cfg.Hyper = st.Hyper
	e, err := New(cfg, net, sp)
	if err != nil {
		return nil, err
	}
	if err := e.src.UnmarshalBinary(st.RNG); err != nil {
		return nil, fmt.Errorf("%w: sampler state: %v", ErrCheckpoint, err)
	}
	e.rng = rand.New(e.src)
	e.step, e.lastRefresh, e.pauseAt, e.refreshes, e.acks = st.Step, st.LastRefresh, st.PauseAt, st.Refreshes, st.Acks
	e.batch = st.Batch
	if st.Loss != nil {
		e.loss = *st.Loss
	}
	e.pending = st.Pending
	e.valBefore, e.testBefore, e.testObjBef = st.ValBefore, st.TestBefore, st.TestObjBefore
	if st.Paused {
		e.state = Paused
	}
	e.resumed = true
	return e, nil
}

// CheckpointNet decodes the model of an engine checkpoint and the step it
// was taken at (export-head uses it; no data is needed).
func CheckpointNet(state []byte) (*model.Net, int, error) {
	st, net, err := decodeState(state)
	if err != nil {
		return nil, 0, err
	}
	return net, st.Step, nil
}

func decodeState(state []byte) (engineState, *model.Net, error) {
	var st engineState
	n := len(state)
	if n < len(ckptMagic)+8 || string(state[:len(ckptMagic)]) != ckptMagic {
		return st, nil, fmt.Errorf("%w: bad header", ErrCheckpoint)
	}
	if crc32.ChecksumIEEE(state[:n-4]) != binary.LittleEndian.Uint32(state[n-4:]) {
		return st, nil, fmt.Errorf("%w: checksum mismatch (truncated or corrupted)", ErrCheckpoint)
	}
	off := len(ckptMagic)
	jl := int(binary.LittleEndian.Uint32(state[off:]))
	off += 4
	if jl > n-4-off {
		return st, nil, fmt.Errorf("%w: header length %d past the end", ErrCheckpoint, jl)
	}
	if err := json.Unmarshal(state[off:off+jl], &st); err != nil {
		return st, nil, fmt.Errorf("%w: %v", ErrCheckpoint, err)
	}
	if st.Version != 1 {
		return st, nil, fmt.Errorf("%w: version %d, this selmix reads 1", ErrCheckpoint, st.Version)
	}
	net, err := model.Load(bytes.NewReader(state[off+jl : n-4]))
	if err != nil {
		return st, nil, fmt.Errorf("checkpoint model: %w", err)
	}
	return st, net, nil
}

// Net is the model the engine trains. Only touch it when Run is not
// running (e.g. to export the head after the run).
func (e *Engine) Net() *model.Net { return e.net }

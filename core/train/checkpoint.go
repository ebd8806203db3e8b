package train

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math"

	"gonum.org/v1/gonum/mat"

	"selmix/core/metric"
)

// Checkpointer receives the engine's complete state: the trainer's (model,
// optimizer, sampler RNG, pseudo-labels) and the engine's own (step,
// schedule, hyperparameters, pending controls, the last evaluation). It runs
// in the engine's goroutine; final marks the end-of-run checkpoint.
type Checkpointer func(step int, state []byte, final bool) error

// SetCheckpointer asks for a checkpoint every `every` refreshes (taken at
// the refresh boundary, before the refresh), one when the run stops early
// and one at the end. Call before Run.
func (e *Engine) SetCheckpointer(every int, f Checkpointer) {
	e.ckptEvery, e.ckpt = every, f
}

// Engine checkpoint, version 2 (all integers little-endian):
//
//	"SELMIXC2"
//	uint32 n, then n bytes of JSON (engineState)
//	float64 arrays, row-major: if Eval, the last evaluation C (K×K), Z (K×d),
//	  W (d×K), b (K); then the head at the checkpoint W (d×K), b (K)
//	the trainer's state (TrainerLen bytes, format Trainer)
//	uint32 CRC-32 (IEEE) of everything before it
//
// Version 1 ("SELMIXCK": JSON, then a model .npz, then the CRC) is still
// read.
const (
	ckptMagic   = "SELMIXC2"
	ckptMagicV1 = "SELMIXCK"
)

// engineState is the JSON part of a version 2 checkpoint.
type engineState struct {
	Version       int           `json:"version"`
	Step          int           `json:"step"`
	LastRefresh   int           `json:"last_refresh"`
	Refreshes     int           `json:"refreshes"`
	Acks          int           `json:"acks"`
	Loss          *float64      `json:"loss,omitempty"` // nil if none or not finite
	Hyper         Hyper         `json:"hyper"`
	Pending       []Control     `json:"pending,omitempty"`
	ValBefore     metric.Report `json:"val_before"`
	TestBefore    metric.Report `json:"test_before"`
	TestObjBefore []float64     `json:"test_obj_before"`
	K             int           `json:"k"`
	D             int           `json:"d"`
	Eval          bool          `json:"eval"`
	Trainer       string        `json:"trainer"`
	TrainerLen    int           `json:"trainer_len"`
	// The interval since the last refresh, and the figures of the one
	// that refresh closed.
	Interval  intervalState `json:"interval"`
	Adapter   adapter       `json:"adapter"`
	Predicted *float64      `json:"predicted,omitempty"`
	Realised  *float64      `json:"realised,omitempty"`
	// The best so far (absent before the first refresh, and in
	// checkpoints written before selmix kept one).
	Best *Best `json:"best,omitempty"`
}

// checkpoint writes a checkpoint if one is due: every ckptEvery refreshes
// (at the boundary), and always when the run has stopped or finished.
func (e *Engine) checkpoint(final bool) error {
	end := e.state == Stopped || final
	if e.ckpt == nil || (!end && (e.ckptEvery <= 0 || e.refreshes == 0 || e.refreshes%e.ckptEvery != 0)) {
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

// MarshalState serialises the engine and its trainer. Only call it from
// the goroutine running Run (or before/after Run).
func (e *Engine) MarshalState() ([]byte, error) {
	sv, err := e.tr.Save()
	if err != nil {
		return nil, fmt.Errorf("saving the trainer: %w", err)
	}
	if len(sv.W) != e.d*e.K || len(sv.B) != e.K {
		return nil, fmt.Errorf("trainer saved a head of %d weights and %d biases, want %d×%d and %d", len(sv.W), len(sv.B), e.d, e.K, e.K)
	}
	var loss *float64
	if !math.IsNaN(e.loss) && !math.IsInf(e.loss, 0) {
		loss = &e.loss
	}
	st := engineState{
		Version: 2, Step: e.step, LastRefresh: e.lastRefresh, Refreshes: e.refreshes, Acks: e.acks,
		Loss: loss, Hyper: e.hyper, Pending: e.pending,
		ValBefore: e.valBefore, TestBefore: e.testBefore, TestObjBefore: e.testObjBef,
		K: e.K, D: e.d, Eval: e.last != nil, Trainer: sv.Format, TrainerLen: len(sv.State),
		Interval: e.iv.state(), Adapter: e.ad, Best: e.best,
	}
	if e.last != nil {
		st.Predicted, st.Realised = e.last.Predicted, e.last.Realised
	}
	js, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	floats := [][]float64{sv.W, sv.B}
	if st.Eval {
		floats = append([][]float64{raw(e.es.C), raw(e.es.Z), raw(e.es.W), e.es.b}, floats...)
	}
	// One allocation of the exact size: at K = 1000 this is tens of MB.
	size := len(ckptMagic) + 4 + len(js) + len(sv.State) + 4
	for _, a := range floats {
		size += 8 * len(a)
	}
	b := make([]byte, 0, size)
	b = append(b, ckptMagic...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(js)))
	b = append(b, js...)
	for _, a := range floats {
		for _, x := range a {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		}
	}
	b = append(b, sv.State...)
	return binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b)), nil
}

// ErrCheckpoint reports a checkpoint that cannot be read.
var ErrCheckpoint = errors.New("not a valid selmix engine checkpoint")

// Checkpoint is a decoded engine checkpoint.
type Checkpoint struct {
	Step    int
	K, D    int
	Trainer *Saved // the trainer's state, with the head at the checkpoint
	st      engineState
	es      *evalState // the last evaluation; nil in version 1
}

// ParseCheckpoint decodes and checks a version 2 checkpoint. A version 1
// file holds a model and is an error here: local.ParseCheckpoint reads it.
func ParseCheckpoint(b []byte) (*Checkpoint, error) { return ParseCheckpointWith(b, nil) }

// ParseCheckpointWith decodes and checks a checkpoint, version 1 or 2;
// readV1 reads a version 1 file's model (nil: a version 1 file is an error).
func ParseCheckpointWith(b []byte, readV1 V1Trainer) (*Checkpoint, error) {
	n := len(b)
	if n < len(ckptMagic)+8 {
		return nil, fmt.Errorf("%w: truncated (%d bytes)", ErrCheckpoint, n)
	}
	magic := string(b[:len(ckptMagic)])
	if magic != ckptMagic && magic != ckptMagicV1 {
		return nil, fmt.Errorf("%w: bad header", ErrCheckpoint)
	}
	if crc32.ChecksumIEEE(b[:n-4]) != binary.LittleEndian.Uint32(b[n-4:]) {
		return nil, fmt.Errorf("%w: checksum mismatch (truncated or corrupted)", ErrCheckpoint)
	}
	off := len(ckptMagic)
	jl := int(binary.LittleEndian.Uint32(b[off:]))
	off += 4
	if jl > n-4-off {
		return nil, fmt.Errorf("%w: header length %d past the end", ErrCheckpoint, jl)
	}
	js, body := b[off:off+jl], b[off+jl:n-4]
	if magic == ckptMagicV1 {
		return parseV1(js, body, readV1)
	}
	var st engineState
	if err := json.Unmarshal(js, &st); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCheckpoint, err)
	}
	if st.Version != 2 {
		return nil, fmt.Errorf("%w: version %d in a version 2 file", ErrCheckpoint, st.Version)
	}
	K, d := st.K, st.D
	if K < 2 || d < 1 || K > 1<<20 || d > 1<<24 || st.TrainerLen < 0 {
		return nil, fmt.Errorf("%w: K=%d, d=%d, trainer state of %d bytes", ErrCheckpoint, K, d, st.TrainerLen)
	}
	sizes := []int{d * K, K}
	if st.Eval {
		sizes = append([]int{K * K, K * d, d * K, K}, sizes...)
	}
	need := st.TrainerLen
	for _, s := range sizes {
		need += 8 * s
	}
	if need != len(body) {
		return nil, fmt.Errorf("%w: %d bytes of arrays and trainer state, header says %d", ErrCheckpoint, len(body), need)
	}
	arrays := make([][]float64, len(sizes))
	for i, s := range sizes {
		arrays[i] = make([]float64, s)
		binary.Read(bytes.NewReader(body[:8*s]), binary.LittleEndian, arrays[i])
		body = body[8*s:]
	}
	ck := &Checkpoint{Step: st.Step, K: K, D: d, st: st}
	if st.Eval {
		ck.es = &evalState{
			C: mat.NewDense(K, K, arrays[0]), Z: mat.NewDense(K, d, arrays[1]),
			W: mat.NewDense(d, K, arrays[2]), b: arrays[3],
		}
		arrays = arrays[4:]
	}
	ck.Trainer = &Saved{Format: st.Trainer, State: body, W: arrays[0], B: arrays[1]}
	return ck, nil
}

// engineStateV1 is the JSON part of a version 1 checkpoint.
type engineStateV1 struct {
	Version       int
	Step          int
	LastRefresh   int
	Refreshes     int
	Acks          int
	Loss          *float64
	Hyper         Hyper
	Pending       []Control
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
		Loss: v1.Loss, Hyper: v1.Hyper, Pending: v1.Pending,
		ValBefore: v1.ValBefore, TestBefore: v1.TestBefore, TestObjBefore: v1.TestObjBefore,
		K: len(sv.B), D: len(sv.W) / len(sv.B), Trainer: sv.Format, TrainerLen: len(sv.State),
	}
	return &Checkpoint{Step: st.Step, K: st.K, D: st.D, st: st, Trainer: sv}, nil
}

// Resume rebuilds an engine from a checkpoint around tr, a trainer already
// restored from ck.Trainer: Run then continues exactly where the checkpoint
// was taken. cfg must be the run's configuration; the checkpoint's
// hyperparameters (with every control applied so far) replace cfg.Hyper.
// A pause in effect when the checkpoint was taken is not restored: it
// changes when steps run, never what they compute.
func Resume(cfg Config, tr Trainer, ck *Checkpoint) (*Engine, error) {
	st := ck.st
	cfg.Hyper = st.Hyper
	e, err := New(cfg, tr)
	if err != nil {
		return nil, err
	}
	if e.K != ck.K || e.d != ck.D {
		return nil, fmt.Errorf("%w: taken with K=%d, d=%d; the trainer has K=%d, d=%d", ErrCheckpoint, ck.K, ck.D, e.K, e.d)
	}
	if st.Step < 0 || st.Step > e.cfg.Steps || st.LastRefresh > st.Step {
		return nil, fmt.Errorf("%w: step %d (last refresh %d) in a run of %d steps", ErrCheckpoint, st.Step, st.LastRefresh, e.cfg.Steps)
	}
	e.step, e.lastRefresh, e.refreshes, e.acks = st.Step, st.LastRefresh, st.Refreshes, st.Acks
	if st.Loss != nil {
		e.loss = *st.Loss
	}
	e.pending = st.Pending
	e.valBefore, e.testBefore, e.testObjBef = st.ValBefore, st.TestBefore, st.TestObjBefore
	e.resumed = true
	if ck.es != nil {
		e.es = *ck.es
		if err := e.recompute(); err != nil {
			return nil, fmt.Errorf("resuming at step %d: %w", st.Step, err)
		}
		e.last.Predicted, e.last.Realised = st.Predicted, st.Realised
	}
	e.iv.restore(st.Interval)
	e.best = st.Best.clone()
	if st.Version == 2 {
		e.ad = st.Adapter
	}
	return e, nil
}

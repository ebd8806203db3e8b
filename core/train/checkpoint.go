package train

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"slices"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"selmix/core/gain"
	"selmix/core/loop"
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

// Engine checkpoint, version 3 (all integers little-endian):
//
//	"SELMIXC3"
//	uint32 n, then n bytes of JSON (engineState), every key snake_case
//	float64 arrays, row-major: if Eval, the last evaluation C (K×K), Z (K×d),
//	  W (d×K), b (K); then the head at the checkpoint W (d×K), b (K)
//	the trainer's state (TrainerLen bytes, format Trainer)
//	uint32 CRC-32 (IEEE) of everything before it
//
// Version 2 ("SELMIXC2") has the same layout, but its JSON names the
// fields of the pending controls (an op by number), of the best and of
// the reports as Go does (engineStateV2); version 1 ("SELMIXCK": JSON,
// then a model .npz, then the CRC). Both are still read.
const (
	ckptMagic   = "SELMIXC3"
	ckptMagicV2 = "SELMIXC2"
	ckptMagicV1 = "SELMIXCK"
)

// engineState is the JSON part of a version 3 checkpoint.
type engineState struct {
	Version       int            `json:"version"`
	Step          int            `json:"step"`
	LastRefresh   int            `json:"last_refresh"`
	Refreshes     int            `json:"refreshes"`
	Acks          int            `json:"acks"`
	Loss          *float64       `json:"loss,omitempty"` // nil if none or not finite
	Hyper         loop.Hyper     `json:"hyper"`
	Pending       []controlState `json:"pending,omitempty"`
	ValBefore     reportState    `json:"val_before"`
	TestBefore    reportState    `json:"test_before"`
	TestObjBefore []float64      `json:"test_obj_before"`
	K             int            `json:"k"`
	D             int            `json:"d"`
	Eval          bool           `json:"eval"`
	Trainer       string         `json:"trainer"`
	TrainerLen    int            `json:"trainer_len"`
	// The interval since the last refresh, and the figures of the one
	// that refresh closed.
	Interval  intervalState `json:"interval"`
	Adapter   adapter       `json:"adapter"`
	Predicted *float64      `json:"predicted,omitempty"`
	Realised  *float64      `json:"realised,omitempty"`
	// The best so far (absent before the first refresh, and in
	// checkpoints written before selmix kept one).
	Best *bestState `json:"best,omitempty"`
	// Top is the best ψ so far, also where the best is not judged
	// (absent before the first refresh, and in checkpoints written
	// before the engine flagged a refresh as the best: then the best's).
	Top *topState `json:"top,omitempty"`
	// Integral is the coverage multipliers' memory (multipliers =
	// integral); Samples the sizes of the samples form's arrays, which
	// follow the evaluation's (absent when the last evaluation read none).
	Integral []float64    `json:"integral,omitempty"`
	Samples  *sampleSizes `json:"samples,omitempty"`
	// PluginBefore is the plug-in classifier on the pre-trained model
	// (absent where the run does not measure it).
	PluginBefore *pluginState `json:"plugin_before,omitempty"`
}

// controlState is a pending Control in a checkpoint: its op by name, as
// the event log writes controls.
type controlState struct {
	Op    string `json:"op"`
	Key   string `json:"key,omitempty"`
	Value string `json:"value,omitempty"`
	At    int    `json:"at"`
	// Auto is written for adapt's controls so that an older selmix
	// still skips them; Source says who asked (absent before sources).
	Auto   bool   `json:"auto,omitempty"`
	Source string `json:"source,omitempty"`
}

func controlStates(cs []loop.Control) []controlState {
	var out []controlState
	for _, c := range cs {
		out = append(out, controlState{Op: c.Op.String(), Key: c.Key, Value: c.Value, At: c.At, Auto: c.Auto(), Source: string(c.Source)})
	}
	return out
}

func (st *engineState) controls() ([]loop.Control, error) {
	var out []loop.Control
	for _, c := range st.Pending {
		op, err := loop.ParseOp(c.Op)
		if err != nil {
			return nil, fmt.Errorf("%w: pending control: %v", ErrCheckpoint, err)
		}
		out = append(out, loop.Control{Op: op, Key: c.Key, Value: c.Value, At: c.At, Source: loop.SourceOf(c.Source, c.Auto)})
	}
	return out, nil
}

// reportState is a metric.Report in a checkpoint (the same fields,
// converted to and from it).
type reportState struct {
	K             int       `json:"k"`
	Prior         []float64 `json:"prior"`
	Recall        []float64 `json:"recall"`
	Coverage      []float64 `json:"coverage"`
	MeanRecall    float64   `json:"mean_recall"`
	MinRecall     float64   `json:"min_recall"`
	HMean         float64   `json:"hmean"`
	GMean         float64   `json:"gmean"`
	MinCoverage   float64   `json:"min_coverage"`
	Accuracy      float64   `json:"accuracy"`
	HeadRecall    float64   `json:"head_recall"`
	TailRecall    float64   `json:"tail_recall"`
	MinHTRecall   float64   `json:"min_ht_recall"`
	HeadCoverage  float64   `json:"head_coverage"`
	TailCoverage  float64   `json:"tail_coverage"`
	MinHTCoverage float64   `json:"min_ht_coverage"`
	Worst         int       `json:"worst"`
}

// bestState is a Best in a checkpoint.
type bestState struct {
	Step      int              `json:"step"`
	Objective metric.Objective `json:"objective"`
	Psi       float64          `json:"psi"`
	Val       reportState      `json:"val"`
	Test      reportState      `json:"test"`
	TestObj   []float64        `json:"test_obj"`
}

func newBestState(b *loop.Best) *bestState {
	if b == nil {
		return nil
	}
	return &bestState{Step: b.Step, Objective: b.Objective, Psi: b.Psi, Val: reportState(b.Val), Test: reportState(b.Test), TestObj: b.TestObj}
}

func (b *bestState) best() *loop.Best {
	if b == nil {
		return nil
	}
	return &loop.Best{Step: b.Step, Objective: b.Objective, Psi: b.Psi, Val: metric.Report(b.Val), Test: metric.Report(b.Test), TestObj: b.TestObj}
}

// checkpoint writes a checkpoint if one is due: every ckptEvery refreshes
// (at the boundary), and always when the run has stopped or finished.
func (e *Engine) checkpoint(final bool) error {
	end := e.state == loop.Stopped || final
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
func (e *Engine) MarshalState() ([]byte, error) { return e.marshalState(e.pending) }

// marshalState serialises the engine with pending as its controls
// scheduled ahead: all of them where the run itself will continue from
// the state, none in a best checkpoint (judgeBest).
func (e *Engine) marshalState(pending []loop.Control) ([]byte, error) {
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
		Version: 3, Step: e.step, LastRefresh: e.lastRefresh, Refreshes: e.refreshes, Acks: e.acks,
		Loss: loss, Hyper: e.hyper, Pending: controlStates(pending),
		ValBefore: reportState(e.valBefore), TestBefore: reportState(e.testBefore), TestObjBefore: e.testObjBef,
		K: e.K, D: e.d, Eval: e.last != nil, Trainer: sv.Format, TrainerLen: len(sv.State),
		Interval: e.iv.state(), Adapter: e.ad, Best: newBestState(e.best), Top: e.top,
		Integral: e.integral, PluginBefore: newPluginState(e.plugBefore),
	}
	sm := e.es.sm
	if st.Eval && sm != nil {
		n, _ := sm.Val.Dims()
		st.Samples = &sampleSizes{N: n, S: sm.S}
	}
	if e.last != nil {
		st.Predicted, st.Realised = e.last.Predicted, e.last.Realised
	}
	js, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	floats := [][]float64{sv.W, sv.B}
	var words []byte
	if st.Eval {
		floats = append([][]float64{raw(e.es.C), raw(e.es.Z), raw(e.es.W), e.es.b}, floats...)
		if st.Samples != nil {
			words = sampleWords(sm)
		}
	}
	// One allocation of the exact size: at K = 1000 this is tens of MB.
	size := len(ckptMagic) + 4 + len(js) + len(words) + len(sv.State) + 4
	for _, a := range floats {
		size += 8 * len(a)
	}
	b := make([]byte, 0, size)
	b = append(b, ckptMagic...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(js)))
	b = append(b, js...)
	for i, a := range floats {
		for _, x := range a {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		}
		if i == 3 && st.Eval {
			b = append(b, words...) // after the evaluation's arrays
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

// Hyper is the researcher's hyperparameters in force at the checkpoint:
// the run's configuration with every control acknowledged by then
// applied, except the engine's own changes under finetune.adapt, which
// work within the learning rate and refresh interval the researcher set:
// those are the ones given. A run continued from the checkpoint runs with
// them (Resume), so a fork's configuration records them.
func (c *Checkpoint) Hyper() loop.Hyper {
	h := c.st.Hyper
	if a := c.st.Adapter; c.st.Version >= 2 && h.Adapt != loop.AdaptNone && h.Adapt != "" {
		if a.BaseLR > 0 {
			h.LR = a.BaseLR
		}
		if a.BaseRefresh > 0 {
			h.Refresh = a.BaseRefresh
		}
	}
	return h
}

// ParseCheckpoint decodes and checks a version 3 or 2 checkpoint. A
// version 1 file holds a model and is an error here: local.ParseCheckpoint
// reads it.
func ParseCheckpoint(b []byte) (*Checkpoint, error) { return ParseCheckpointWith(b, nil) }

// ParseCheckpointWith decodes and checks a checkpoint, version 1, 2 or 3;
// readV1 reads a version 1 file's model (nil: a version 1 file is an error).
func ParseCheckpointWith(b []byte, readV1 V1Trainer) (*Checkpoint, error) {
	n := len(b)
	if n < len(ckptMagic)+8 {
		return nil, fmt.Errorf("%w: truncated (%d bytes)", ErrCheckpoint, n)
	}
	magic := string(b[:len(ckptMagic)])
	if magic != ckptMagic && magic != ckptMagicV2 && magic != ckptMagicV1 {
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
	st, err := parseState(magic, js)
	if err != nil {
		return nil, err
	}
	K, d := st.K, st.D
	if K < 2 || d < 1 || K > 1<<20 || d > 1<<24 || st.TrainerLen < 0 {
		return nil, fmt.Errorf("%w: K=%d, d=%d, trainer state of %d bytes", ErrCheckpoint, K, d, st.TrainerLen)
	}
	if err := st.validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCheckpoint, err)
	}
	sizes := []int{d * K, K}
	if st.Eval {
		sizes = append([]int{K * K, K * d, d * K, K}, sizes...)
	}
	need := st.TrainerLen + 4*int(st.Samples.words(int64(K), int64(d)))
	for _, s := range sizes {
		need += 8 * s
	}
	if need != len(body) {
		return nil, fmt.Errorf("%w: %d bytes of arrays and trainer state, header says %d", ErrCheckpoint, len(body), need)
	}
	arrays := make([][]float64, len(sizes))
	var sm *gain.SampleSet
	for i, s := range sizes {
		arrays[i] = make([]float64, s)
		binary.Read(bytes.NewReader(body[:8*s]), binary.LittleEndian, arrays[i])
		body = body[8*s:]
		if sz := st.Samples; i == 3 && st.Eval && sz != nil {
			// The samples' words follow the evaluation's arrays.
			n := 4 * int(sz.words(int64(K), int64(d)))
			if sm, err = readSampleWords(body[:n], sz, K, d); err != nil {
				return nil, err
			}
			body = body[n:]
		}
	}
	ck := &Checkpoint{Step: st.Step, K: K, D: d, st: st}
	if st.Eval {
		ck.es = &evalState{
			C: mat.NewDense(K, K, arrays[0]), Z: mat.NewDense(K, d, arrays[1]),
			W: mat.NewDense(d, K, arrays[2]), b: arrays[3], sm: sm,
		}
		arrays = arrays[4:]
	}
	ck.Trainer = &Saved{Format: st.Trainer, State: body, W: arrays[0], B: arrays[1]}
	return ck, nil
}

// maxCkptHeader bounds the JSON header of a checkpoint (a few KB at
// K = 10, hundreds at K = 1000).
const maxCkptHeader = 64 << 20

// CheckpointHead checks, from the beginning of a checkpoint file of size
// bytes read from r, that its header declares exactly size bytes, so that
// a file that is not what its header says (cut short, or grown: a 5 GB
// sparse tail) is refused before it is read into memory. It reads the
// magic and the JSON header only (at most 64 MiB). A version 1 file
// declares no size and is accepted here (ParseCheckpointWith checks it).
func CheckpointHead(r io.Reader, size int64) error {
	var pre [len(ckptMagic) + 4]byte
	if size < int64(len(pre))+4 {
		return fmt.Errorf("%w: truncated (%d bytes)", ErrCheckpoint, size)
	}
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return fmt.Errorf("%w: header: %v", ErrCheckpoint, err)
	}
	magic := string(pre[:len(ckptMagic)])
	if magic != ckptMagic && magic != ckptMagicV2 && magic != ckptMagicV1 {
		return fmt.Errorf("%w: bad header", ErrCheckpoint)
	}
	if magic == ckptMagicV1 {
		return nil
	}
	jl := int64(binary.LittleEndian.Uint32(pre[len(ckptMagic):]))
	if jl > size-int64(len(pre))-4 || jl > maxCkptHeader {
		return fmt.Errorf("%w: header length %d in a file of %d bytes", ErrCheckpoint, jl, size)
	}
	js := make([]byte, jl)
	if _, err := io.ReadFull(r, js); err != nil {
		return fmt.Errorf("%w: header: %v", ErrCheckpoint, err)
	}
	st, err := parseState(magic, js)
	if err != nil {
		return err
	}
	body, err := bodySize(st)
	if err != nil {
		return err
	}
	if want := int64(len(pre)) + jl + body + 4; want != size {
		return fmt.Errorf("%w: %d bytes, its header declares %d", ErrCheckpoint, size, want)
	}
	return nil
}

// bodySize is the size of the arrays and trainer state st declares.
func bodySize(st engineState) (int64, error) {
	K, d := int64(st.K), int64(st.D)
	if K < 2 || d < 1 || K > 1<<20 || d > 1<<24 || st.TrainerLen < 0 {
		return 0, fmt.Errorf("%w: K=%d, d=%d, trainer state of %d bytes", ErrCheckpoint, K, d, st.TrainerLen)
	}
	n := int64(st.TrainerLen) + 8*(d*K+K)
	if st.Eval {
		n += 8*(K*K+K*d+d*K+K) + 4*st.Samples.words(K, d)
	}
	return n, nil
}

// validate checks what a checksum cannot: that the state is one an
// engine could have been in (a checkpoint rewritten with a valid checksum
// around batch 0, lr −1, step −5 or an unknown pending op, or a version 2
// header over version 3 JSON, whose reports then read as zeros, is
// refused here and passed over like damage).
func (st *engineState) validate() error {
	switch {
	case st.Step < 0:
		return fmt.Errorf("step %d", st.Step)
	case st.LastRefresh < 0 || st.LastRefresh > st.Step:
		return fmt.Errorf("last refresh at step %d of %d", st.LastRefresh, st.Step)
	case st.Refreshes < 0 || st.Acks < 0:
		return fmt.Errorf("%d refreshes, %d controls acknowledged", st.Refreshes, st.Acks)
	}
	if err := st.Hyper.Validate(); err != nil {
		return fmt.Errorf("hyperparameters: %v", err)
	}
	pending, err := st.controls()
	if err != nil {
		return err
	}
	for _, c := range pending {
		if c.At < 0 {
			return fmt.Errorf("pending control %s at step %d", c, c.At)
		}
		if c.Op == loop.OpSet {
			h := st.Hyper
			if err := h.Set(c.Key, c.Value); err != nil {
				return fmt.Errorf("pending control: %v", err)
			}
		}
	}
	for _, r := range []struct {
		name string
		rep  reportState
	}{{"val_before", st.ValBefore}, {"test_before", st.TestBefore}} {
		if err := r.rep.check(st.K); err != nil {
			return fmt.Errorf("%s: %v", r.name, err)
		}
	}
	if sz := st.Samples; sz != nil && (!st.Eval || sz.N < 1 || sz.N > 1<<26 || sz.S < 1 || sz.S > loop.MaxDraws) {
		return fmt.Errorf("samples of %d validation rows and %d draws", sz.N, sz.S)
	}
	for i, v := range st.Integral {
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("integral term %d is %v", i, v)
		}
	}
	return nil
}

// check says whether r is a report of K classes (or none yet) whose
// fields agree: its worst class has the least recall, and that recall is
// its minimum.
func (r reportState) check(K int) error {
	if r.K == 0 && len(r.Recall) == 0 && len(r.Prior) == 0 && len(r.Coverage) == 0 {
		return nil // not evaluated yet
	}
	if r.K != K || len(r.Recall) != K || len(r.Prior) != K || len(r.Coverage) != K {
		return fmt.Errorf("a report of K=%d with %d recalls, %d priors, %d coverages in a checkpoint of K=%d", r.K, len(r.Recall), len(r.Prior), len(r.Coverage), K)
	}
	if mean := floats.Sum(r.Recall) / float64(K); !(math.Abs(mean-r.MeanRecall) <= 1e-9) && !math.IsNaN(mean) {
		return fmt.Errorf("mean recall %v, the mean of its recalls %v", r.MeanRecall, mean)
	}
	same := r.Worst >= 0 && r.Worst < K && (r.Recall[r.Worst] == r.MinRecall || math.IsNaN(r.Recall[r.Worst]) && math.IsNaN(r.MinRecall))
	if !same || slices.ContainsFunc(r.Recall, func(x float64) bool { return x < r.MinRecall }) {
		return fmt.Errorf("min recall %v is not the least recall (class %d)", r.MinRecall, r.Worst)
	}
	return nil
}

// parseState decodes the JSON part of a version 3 or (magic ckptMagicV2)
// version 2 checkpoint into the version 3 form.
func parseState(magic string, js []byte) (engineState, error) {
	version, st := 3, engineState{}
	var err error
	if magic == ckptMagicV2 {
		var v2 engineStateV2
		version, err = 2, json.Unmarshal(js, &v2)
		st = v2.state()
		var keys struct {
			ValBefore map[string]json.RawMessage `json:"val_before"`
		}
		if err == nil && json.Unmarshal(js, &keys) == nil && keys.ValBefore["mean_recall"] != nil {
			return st, fmt.Errorf("%w: version 3 JSON (snake_case reports) in a version 2 file", ErrCheckpoint)
		}
	} else {
		err = json.Unmarshal(js, &st)
	}
	if err != nil {
		return st, fmt.Errorf("%w: %v", ErrCheckpoint, err)
	}
	if st.Version != version {
		return st, fmt.Errorf("%w: version %d in a version %d file", ErrCheckpoint, st.Version, version)
	}
	return st, nil
}

// Resume rebuilds an engine from a checkpoint around tr, a trainer already
// restored from ck.Trainer: Run then continues exactly where the checkpoint
// was taken. cfg must be the run's configuration; the checkpoint's
// hyperparameters (with every control applied so far) replace cfg.Hyper.
// A pause in effect when the checkpoint was taken is not restored: it
// changes when steps run, never what they compute.
func Resume(cfg loop.Config, tr Trainer, ck *Checkpoint) (*Engine, error) {
	st := ck.st
	pending, err := st.controls()
	if err != nil {
		return nil, err
	}
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
	e.pending = pending
	e.valBefore, e.testBefore, e.testObjBef = metric.Report(st.ValBefore), metric.Report(st.TestBefore), st.TestObjBefore
	e.resumed = true
	e.integral = slices.Clone(st.Integral)
	e.plugBefore = st.PluginBefore.plugin()
	if ck.es != nil {
		e.es = *ck.es
		if err := e.recompute(); err != nil {
			return nil, fmt.Errorf("resuming at step %d: %w", st.Step, err)
		}
		e.last.Predicted, e.last.Realised = st.Predicted, st.Realised
	}
	e.iv.restore(st.Interval)
	e.best = st.Best.best().Clone()
	if e.best != nil {
		// A checkpoint does not record whether the best's ψ was aimed:
		// the margin in force now was, unless a control changed it since
		// (the best is judged without the multipliers' memory).
		e.best.Aimed = loop.Aimed(e.best.Objective, e.hyper.CovMargin)
	}
	switch {
	case st.Top != nil:
		t := *st.Top
		e.top = &t
	case e.best != nil:
		e.top = &topState{Objective: e.best.Objective, Psi: e.best.Psi, Step: e.best.Step}
	}
	if st.Version >= 2 {
		e.ad = st.Adapter
	}
	return e, nil
}

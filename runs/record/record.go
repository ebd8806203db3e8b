// Package record connects the engine to the run store: it turns the
// engine's snapshot stream into events in a run's log (and their arrays
// in its sidecar), writes the engine's checkpoints, keeps run.json
// current, and reads a run's log back into typed history. The on-disk
// schema is format.go's; docs/run-format.md documents it.
package record

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sync"

	"selmix/core/experiment"
	"selmix/core/loop"
	"selmix/runs"
)

// Event kinds in events.jsonl.
const (
	KindStart   = "start"   // a session began (the run, or a resumption of it): Start
	KindRefresh = "refresh" // one evaluation: RefreshData, arrays: vectors [, G and P]
	KindControl = "control" // a control took effect or was refused: ControlData
	KindFinal   = "final"   // the run ended: SummaryData
	KindStop    = "stop"    // a session stopped early; the run is resumable: SummaryData, scalars only
	KindError   = "error"   // the run failed: ErrorData
)

// Start opens a run's log, and each resumption of it.
type Start struct {
	Step       int      `json:"step"`
	Total      int      `json:"total"`
	K          int      `json:"k"`
	ClassNames []string `json:"class_names,omitempty"`
	// TrainCounts are the labeled samples per class: they decide the
	// head/tail split viewers show.
	TrainCounts []int `json:"train_counts,omitempty"`
	Resumed     bool  `json:"resumed,omitempty"`
}

// ErrorData is the payload of an error event.
type ErrorData struct {
	Err string `json:"error"`
}

// Recorder writes one run. Create it with New or Reopen, give the engine
// its Checkpointer, Follow the engine's stream, then Close.
type Recorder struct {
	pinAt   int // the step whose checkpoint is pinned (PinAt)
	w       *runs.Writer
	opt     Options
	every   int // G and P are kept at every every-th refresh (and the last)
	nref    int // refresh events in the log
	mu      sync.Mutex
	best    float64
	bestAt  int
	bestObj string // the objective best is a value of
	// seen holds the events already in the log when it was reopened, by
	// kind, step and payload, with the records they refer to: a resumed
	// engine reproduces them, and they are not written again.
	seen map[string][]runs.Ref

	// A checkpoint waits until every event published before it is on
	// disk: a run resumed from it then never lacks an event the engine
	// will not publish again (see Checkpointer).
	fmu      sync.Mutex
	fcond    *sync.Cond
	handled  int  // events taken from the followed stream and written (or failed)
	followed bool // Follow has returned
}

// Options are what a recording keeps besides the log: a run's [record]
// settings (OptionsOf). The zero value keeps G and P at every refresh,
// writes a checkpoint only when the run stops or ends, and keeps no best
// checkpoint.
type Options struct {
	// MatricesEvery keeps G and P at every n-th refresh and the last
	// (record.matrices_every); 0 means every refresh.
	MatricesEvery int
	// CheckpointEvery is the refreshes between checkpoints
	// (record.checkpoint_every); 0 means only when the run stops or ends.
	CheckpointEvery int
	// Best keeps the checkpoint of each new best ψ (record.best).
	Best bool
}

// OptionsOf is the recording a configuration's [record] asks for.
func OptionsOf(r experiment.Record) Options {
	return Options{MatricesEvery: r.MatricesEvery, CheckpointEvery: r.CheckpointEvery, Best: r.Best}
}

// check refuses what no configuration can say.
func (o Options) check() error {
	if o.MatricesEvery < 0 {
		return fmt.Errorf("record.matrices_every: want ≥ 1, got %d", o.MatricesEvery)
	}
	if o.CheckpointEvery < 0 {
		return fmt.Errorf("record.checkpoint_every: want ≥ 1, got %d", o.CheckpointEvery)
	}
	return nil
}

// New creates a run under root for an experiment with the given resolved
// configuration text, recorded as opt says (OptionsOf the same
// configuration).
func New(root, name, configTOML string, opt Options, meta runs.Meta) (*Recorder, error) {
	if err := opt.check(); err != nil {
		return nil, fmt.Errorf("create run: %w", err)
	}
	meta.Status = runs.StatusRunning
	if meta.BestObjective == "" {
		meta.BestStep = -1 // no refresh yet
	}
	meta.Format = runs.Format
	w, err := runs.Create(root, name, configTOML, meta)
	if err != nil {
		return nil, err
	}
	// A run from another's checkpoint starts from the best the engine
	// carries (meta's best: app.Start gives it).
	r := &Recorder{w: w, opt: opt, every: max(opt.MatricesEvery, 1), best: math.Inf(-1), bestAt: -1}
	if meta.BestObjective != "" {
		r.best, r.bestAt, r.bestObj = meta.Best, meta.BestStep, meta.BestObjective
	}
	r.fcond = sync.NewCond(&r.fmu)
	return r, nil
}

// Options is how r records its run.
func (r *Recorder) Options() Options { return r.opt }

// Reopen takes over an existing run to continue it, recorded as its
// config.toml says (OptionsOf its [record]). Events the resumed engine
// reproduces (those already in the log) are not written again.
func Reopen(root, id string) (*Recorder, error) {
	// Refuse what cannot be continued before taking the run over: the
	// writer repairs torn tails as it opens.
	pre, err := runs.Open(root, id)
	if err != nil {
		return nil, err
	}
	if f := pre.Meta.Format; f != runs.Format {
		return nil, fmt.Errorf("run %s is in format %d; this selmix continues runs of format %d only (it can still open, export and compare it)", pre.Meta.ID, f, runs.Format)
	}
	w, err := runs.OpenWriter(root, id)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Recorder, error) {
		w.Close()
		return nil, err
	}
	run, err := runs.Open(root, w.ID())
	if err != nil {
		return fail(err)
	}
	c, err := run.Recorded()
	if err != nil {
		return fail(err)
	}
	opt := OptionsOf(c.Record)
	if err := opt.check(); err != nil {
		return fail(fmt.Errorf("%s/config.toml: %w", run.Dir, err))
	}
	r := &Recorder{w: w, opt: opt, every: max(opt.MatricesEvery, 1), best: math.Inf(-1), bestAt: -1, seen: map[string][]runs.Ref{}}
	r.fcond = sync.NewCond(&r.fmu)
	evs, _, err := run.Events()
	if err != nil {
		return fail(err)
	}
	for _, ev := range evs {
		if ev.Kind == KindRefresh {
			r.nref++
		}
		if k := key(ev.Kind, ev.Step, ev.Data); r.seen[k] == nil {
			r.seen[k] = append([]runs.Ref{}, ev.Arrays...)
		}
	}
	m := w.Meta()
	if m.BestStep >= 0 && m.Steps > 0 {
		r.best, r.bestAt, r.bestObj = m.Best, m.BestStep, m.BestObjective
		if r.bestObj == "" {
			r.bestObj = m.Objective // written before best_objective was
		}
	}
	if err := w.SetMeta(func(m *runs.Meta) { m.Status = runs.StatusRunning }); err != nil {
		return fail(err)
	}
	return r, nil
}

// key identifies an event for de-duplication on resume: the engine
// reproduces events bit for bit, so kind, step and payload (which holds
// no reference into arrays.bin) say which event it is; its arrays are
// compared by content when it comes to it (see logged).
func key(kind string, step int, data []byte) string {
	return fmt.Sprintf("%s@%d@%s", kind, step, data)
}

// Writer is the underlying run writer.
func (r *Recorder) Writer() *runs.Writer { return r.w }

// Checkpointer writes engine checkpoints into the run; st is the stream
// Follow writes. It runs in the engine's goroutine, after the engine
// published every event the state it hands over has seen, and first waits
// until Follow has written all of them: a run resumed from the checkpoint
// must find in its log every event it will not publish again.
func (r *Recorder) Checkpointer(st *loop.Stream) func(step int, state []byte, final bool) error {
	return func(step int, state []byte, final bool) error {
		r.flush(st.Events())
		if final || (r.pinAt > 0 && step == r.pinAt) {
			return r.w.WriteFinalCheckpoint(step, state)
		}
		return r.w.WriteCheckpoint(step, state)
	}
}

// PinAt pins the checkpoint taken at step (0: none): retention keeps the
// checkpoint of a scheduled stop (sweep member --stop-at), where a
// successive-halving member resumes and from which a population's member
// may be copied (and that copy replayed) while the run goes on. Call it
// before the engine runs.
func (r *Recorder) PinAt(step int) { r.pinAt = step }

// BestKeeper writes the engine's best checkpoints into the run (see
// train.Engine.KeepBest); like Checkpointer, it first waits until Follow
// has written every event the state has seen.
func (r *Recorder) BestKeeper(st *loop.Stream) func(step int, state []byte) error {
	return func(step int, state []byte) error {
		r.flush(st.Events())
		return r.w.WriteBestCheckpoint(step, state)
	}
}

// LogStart appends the start (or resume) event.
func (r *Recorder) LogStart(s Start) error {
	_, err := r.w.Append(KindStart, s.Step, s, true)
	return err
}

// logged reports whether the log already holds this event with these
// arrays: decided before anything is written, and on content, so a
// reproduced event writes neither a record nor a line, and the records
// after it land where an uninterrupted run has them. records lists what
// the event would refer to; the logged event may refer to fewer (a
// refresh whose G and P were not kept), and those are compared.
func (r *Recorder) logged(kind string, step int, data []byte, records [][]runs.Array) (bool, error) {
	refs, ok := r.seen[key(kind, step, data)]
	switch {
	case !ok || len(refs) > len(records):
		return false, nil
	case len(refs) == 0:
		return len(records) == 0, nil
	}
	f, err := runs.OpenArrayFile(runs.ArraysPath(r.w.Dir()))
	if err != nil {
		return false, err
	}
	defer f.Close()
	for i, ref := range refs {
		got, err := f.Read(ref)
		if err != nil {
			return false, err
		}
		if !sameArrays(got, records[i]) {
			return false, nil
		}
	}
	return true, nil
}

// sameArrays compares records as stored: names, dtypes, shapes and the
// values after rounding to each dtype, bit for bit.
func sameArrays(stored, fresh []runs.Array) bool {
	if len(stored) != len(fresh) {
		return false
	}
	for i, a := range stored {
		b := fresh[i]
		if a.Name != b.Name || a.DType != b.DType || len(a.Data) != len(b.Data) || !slices.Equal(a.Shape, b.Shape) {
			return false
		}
		for j, x := range a.Data {
			y := b.Data[j]
			if a.DType == runs.Float32 {
				y = float64(float32(y))
			}
			if math.Float64bits(x) != math.Float64bits(y) {
				return false
			}
		}
	}
	return true
}

// append writes one event without arrays, unless the reopened log already
// has it. Session markers (start, stop) are never de-duplicated.
func (r *Recorder) append(kind string, step int, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encoding %s event: %w", kind, err)
	}
	if r.seen != nil && kind != KindStart && kind != KindStop {
		if dup, _ := r.logged(kind, step, b, nil); dup {
			return nil
		}
	}
	_, err = r.w.Append(kind, step, json.RawMessage(b), true)
	return err
}

// Follow writes the stream's events until it closes. Refresh, control,
// final, stop and error events are fsynced. A write error (say, a full
// disk) is returned after the stream ends; the caller stops the engine on
// the first one via onErr, so nothing more is lost than the failed event.
func (r *Recorder) Follow(ctx context.Context, st *loop.Stream, onErr func(error)) error {
	defer func() {
		r.fmu.Lock()
		r.followed = true
		r.fcond.Broadcast()
		r.fmu.Unlock()
	}()
	var firstErr error
	fail := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
			if onErr != nil {
				onErr(err)
			}
		}
	}
	for {
		s, ok := st.Next(ctx)
		if !ok {
			return firstErr
		}
		if firstErr == nil {
			r.handle(s, fail)
		}
		if s.Kind != loop.KindStep {
			r.fmu.Lock()
			r.handled++
			r.fcond.Broadcast()
			r.fmu.Unlock()
		}
	}
}

// handle writes one snapshot's event; fail takes every error.
func (r *Recorder) handle(s loop.Snapshot, fail func(error)) {
	switch s.Kind {
	case loop.KindRefresh:
		fail(r.logRefresh(s))
		fail(r.noteRefresh(s))
	case loop.KindControl:
		if s.Ack != nil {
			fail(r.append(KindControl, s.Step, ControlRecord(*s.Ack)))
		}
		fail(r.w.SetMeta(func(m *runs.Meta) { m.Status = statusOf(s.State); m.Steps = s.Step }))
	case loop.KindFinal:
		// A stop ends a session, not the run: it is logged apart, with
		// scalars only and no arrays, so a stopped and resumed run logs
		// (and places its records) exactly as an uninterrupted one, plus
		// its session markers.
		kind, vectors := KindFinal, true
		if s.State == loop.Stopped {
			kind, vectors = KindStop, false
		}
		if s.Summary != nil {
			fail(r.append(kind, s.Step, SummaryRecord(s.Summary, vectors)))
			js, err := json.MarshalIndent(SummaryRecord(s.Summary, true), "", "  ")
			if err == nil {
				err = r.w.WriteSummary(append(js, '\n'))
			}
			fail(err)
		}
		fail(r.w.SetMeta(func(m *runs.Meta) { m.Status = statusOf(s.State); m.Steps = s.Step }))
	case loop.KindError:
		fail(r.append(KindError, s.Step, ErrorData{s.Err}))
		fail(r.w.SetMeta(func(m *runs.Meta) { m.Status = runs.StatusError; m.Steps = s.Step }))
	}
}

// logRefresh writes a refresh event with its per-class vectors and, at
// every every-th refresh of the run and at its last, G and P. Which
// refreshes keep their matrices depends only on their place in the run,
// so a resumed run keeps the same ones.
func (r *Recorder) logRefresh(s loop.Snapshot) error {
	rs := s.Refresh
	if rs == nil {
		return fmt.Errorf("refresh snapshot at step %d has no evaluation", s.Step)
	}
	// The loss comes from the refresh snapshot itself, not from the
	// coalesced step stream, so the event does not depend on timing.
	b, err := json.Marshal(refreshData(s.Step, s.Total, s.State, s.Hyper, s.Loss, rs))
	if err != nil {
		return fmt.Errorf("encoding refresh event: %w", err)
	}
	vec, mat := vectorArrays(rs), matrixArrays(rs)
	if r.seen != nil {
		dup, err := r.logged(KindRefresh, s.Step, b, [][]runs.Array{vec, mat})
		if err != nil {
			return fmt.Errorf("comparing a reproduced refresh at step %d with the log: %w", s.Step, err)
		}
		if dup {
			return nil
		}
	}
	records := [][]runs.Array{vec}
	if r.nref%r.every == 0 || s.Step >= s.Total {
		records = append(records, mat)
	}
	if _, err := r.w.AppendArrays(KindRefresh, s.Step, json.RawMessage(b), records, true); err != nil {
		return err
	}
	r.nref++
	return nil
}

// flush waits until Follow has handled the first n events of its stream,
// or has returned.
func (r *Recorder) flush(n int) {
	r.fmu.Lock()
	defer r.fmu.Unlock()
	for r.handled < n && !r.followed {
		r.fcond.Wait()
	}
}

// noteRefresh records the best value of the optimized objective from the
// refresh's Best flag, which the engine judges (loop.Refresh.Best).
func (r *Recorder) noteRefresh(s loop.Snapshot) error {
	psi, obj := s.Refresh.Psi, s.Hyper.Objective
	r.mu.Lock()
	if s.Refresh.Best {
		r.best, r.bestAt, r.bestObj = psi, s.Step, string(obj)
	}
	best, at, bestObj := r.best, r.bestAt, r.bestObj
	r.mu.Unlock()
	return r.w.SetMeta(func(m *runs.Meta) {
		m.Steps = s.Step
		m.Objective, m.Policy = string(obj), string(s.Hyper.Policy)
		if at >= 0 {
			m.Best, m.BestStep, m.BestObjective = best, at, bestObj
		}
		if m.Status != runs.StatusPaused {
			m.Status = statusOf(s.State)
		}
	})
}

func statusOf(s loop.State) string {
	switch s {
	case loop.Paused:
		return runs.StatusPaused
	case loop.Finished:
		return runs.StatusFinished
	case loop.Stopped:
		return runs.StatusStopped
	case loop.Failed:
		return runs.StatusError
	}
	return runs.StatusRunning
}

// Close releases the run. If the run did not reach an end state (a crash
// of the process is the other way to get here), its status says so.
func (r *Recorder) Close(interrupted bool) error {
	if interrupted {
		r.w.SetMeta(func(m *runs.Meta) {
			if m.Status == runs.StatusRunning || m.Status == runs.StatusPaused {
				m.Status = runs.StatusStopped
			}
		})
	}
	return r.w.Close()
}

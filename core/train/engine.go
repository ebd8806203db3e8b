// Package train is the SelMix fine-tuning engine (docs/method.md, paper
// Alg. 2). It drives a Trainer (the model, its data and its device) from
// the caller's goroutine, reports through Streams of immutable Snapshots and
// takes Controls at step boundaries. It knows nothing of terminals or files.
package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"selmix/core/gain"
	"selmix/core/loop"
	"selmix/core/metric"
)

// Engine runs one fine-tuning run. Create with New (or Resume), Subscribe
// viewers, then call Run once; Send may be called from any goroutine at any
// time.
type Engine struct {
	cfg   loop.Config
	tr    Trainer
	info  Info
	K, d  int
	tail  []bool
	hyper loop.Hyper

	mu    sync.Mutex
	inbox []loop.Control
	subs  []*loop.Stream
	ended bool // Run has returned; guarded by mu
	// now is the last snapshot published (but a trainer's line) and sys
	// the last System a refresh carried: where a subscriber that joins a
	// running engine starts. Guarded by mu.
	now  *loop.Snapshot
	sys  *loop.System
	wake chan struct{}
	// stopping is closed when a Stop for now arrives; guarded by mu.
	stopping chan struct{}

	// Owned by Run's goroutine.
	lastRefresh int     // step of the last refresh
	pauseAt     int     // single-step target: pause at the refresh at this step; -1 = none
	refreshes   int     // refreshes since the start of the run
	acks        int     // controls acknowledged since the start of the run
	loss        float64 // training loss of the last step; NaN before the first
	resumed     bool
	ckpt        Checkpointer
	ckptEvery   int
	valBefore   metric.Report
	testBefore  metric.Report
	plugBefore  *loop.Plugin
	testObjBef  []float64
	step        int
	state       loop.State
	pending     []loop.Control // controls with a future At, sorted by At
	gc          gain.Computer
	last        *loop.Refresh
	es          evalState
	integral    []float64   // the coverage multipliers' memory (multipliers = integral)
	iv          interval    // the current refresh interval's prediction
	bs          *loop.Basis // the last evaluation's, shared by its Refreshes
	ad          adapter     // finetune.adapt's controller
	pace        pacer
	soft        *softLoss  // the loss of a policy that does not mix; nil otherwise
	best        *loop.Best // the best so far; nil before the first refresh
	top         *topState  // the best ψ so far and where, also when the best is not judged; nil before the first refresh
	keep        func(step int, state []byte) error
	noBest      bool // JudgeBest(false)
}

// New returns an engine that fine-tunes what tr holds.
func New(cfg loop.Config, tr Trainer) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	info := tr.Info()
	if info.K < 2 || info.D < 1 {
		return nil, fmt.Errorf("trainer reports K=%d classes and d=%d features; want K ≥ 2, d ≥ 1", info.K, info.D)
	}
	if len(info.TrainCounts) != info.K {
		return nil, fmt.Errorf("trainer reports %d training counts for K=%d classes", len(info.TrainCounts), info.K)
	}
	if cfg.Form == gain.Samples && !CanFeature(tr) {
		return nil, fmt.Errorf("finetune.form = samples: %w (%s); paper and official need only the centroids", ErrNoFeatures, info.Device)
	}
	counts := make([]float64, info.K)
	for k, n := range info.TrainCounts {
		counts[k] = float64(n)
	}
	return &Engine{
		cfg: cfg, tr: tr, info: info, K: info.K, d: info.D, hyper: cfg.Hyper,
		tail:     metric.TailSplit(counts),
		ad:       newAdapter(cfg.Hyper),
		wake:     make(chan struct{}, 1),
		stopping: make(chan struct{}),
		state:    loop.Running,
		pauseAt:  -1,
		loss:     math.NaN(),
	}, nil
}

// Info is the trainer's description of the model and data.
func (e *Engine) Info() Info { return e.info }

// Subscribe returns a new stream of this run's snapshots. Call before Run
// to see every event; a stream that joins later starts with a step
// snapshot of where the run stands (its state, paused or not, and the
// device as its last refresh measured it).
func (e *Engine) Subscribe() *loop.Stream {
	s := loop.NewStream()
	e.mu.Lock()
	if e.ended {
		s.Close() // nothing more will be published
	} else {
		e.subs = append(e.subs, s)
		if e.now != nil {
			s.Publish(standing(*e.now, e.sys))
		}
	}
	e.mu.Unlock()
	return s
}

// standing is s as a step snapshot: where the run stands (its step,
// state, controls and last refresh, with sys, the device as last
// measured), without the event s reported. A subscriber that joins a
// running engine receives it first, so a run paused before it joined
// shows paused at once.
func standing(s loop.Snapshot, sys *loop.System) loop.Snapshot {
	s.Kind, s.Ack, s.Summary, s.Err, s.Text, s.System = loop.KindStep, nil, nil, "", "", sys
	return s
}

// Unsubscribe stops publishing to st (a viewer that went away) and closes
// it.
func (e *Engine) Unsubscribe(st *loop.Stream) {
	e.mu.Lock()
	for i, s := range e.subs {
		if s == st {
			e.subs = append(e.subs[:i:i], e.subs[i+1:]...)
			break
		}
	}
	e.mu.Unlock()
	st.Close()
}

// Send queues c for the engine; it never blocks.
func (e *Engine) Send(c loop.Control) {
	e.mu.Lock()
	e.inbox = append(e.inbox, c)
	if c.Op == loop.OpStop && c.At == 0 {
		select {
		case <-e.stopping:
		default:
			close(e.stopping)
		}
	}
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Stopping is closed once a Stop for now has been sent: a Trainer whose
// request may hang (a worker) can be told to give up, so that the stop
// does not wait on it (its error then wraps ErrHalt).
func (e *Engine) Stopping() <-chan struct{} { return e.stopping }

// Note publishes a line from the trainer (a worker's stderr) to viewers.
// It may be called from any goroutine.
func (e *Engine) Note(text string) {
	e.mu.Lock()
	ended := e.ended
	e.mu.Unlock()
	if !ended {
		e.publish(loop.Snapshot{Kind: loop.KindLog, Text: text, Total: e.cfg.Steps})
	}
}

func (e *Engine) publish(s loop.Snapshot) {
	e.mu.Lock()
	subs := e.subs
	if s.Kind != loop.KindLog {
		e.now = &s
		if s.System != nil {
			e.sys = s.System
		}
	}
	e.mu.Unlock()
	for _, st := range subs {
		st.Publish(s)
	}
}

func (e *Engine) snapshot(k loop.Kind) loop.Snapshot {
	return loop.Snapshot{Kind: k, Step: e.step, Total: e.cfg.Steps, State: e.state, Hyper: e.hyper, Refresh: e.last, Loss: e.loss, LR: e.lr()}
}

// ErrStopped is returned by Run when a Stop control or the context ended
// the run early. The run is resumable from the checkpoint it wrote; the
// summary describes the model where it stopped.
var ErrStopped = errors.New("run stopped")

// ErrHalt marks a Trainer error after which the run is stopped rather
// than failed: nothing is wrong with the run, only the Trainer cannot go
// on now (it was interrupted while it worked, or ran out of memory). Run
// then ends at once with a *Halted, asking the Trainer for nothing more.
var ErrHalt = errors.New("trainer halted")

// Halted is Run's error when a Trainer error wrapping ErrHalt ended the
// run: it is stopped, with no summary and no checkpoint of its own, and
// resumes from its last checkpoint exactly. It wraps ErrStopped and the
// Trainer's error.
type Halted struct {
	Step int // the step the run stood at
	Err  error
}

func (h *Halted) Error() string   { return h.Err.Error() }
func (h *Halted) Unwrap() []error { return []error{ErrStopped, h.Err} }

// Run fine-tunes until the step budget is spent, a Stop arrives or ctx
// ends. It returns the summary of what was reached.
//
// A stop leaves the run exactly resumable: it publishes no refresh and
// changes no state, and its checkpoint holds the last evaluation, so a run
// resumed from it refreshes, samples and schedules as if never stopped.
func (e *Engine) Run(ctx context.Context) (sum *loop.Summary, err error) {
	defer func() {
		e.mu.Lock()
		e.ended = true
		for _, s := range e.subs {
			s.Close()
		}
		e.mu.Unlock()
	}()
	start := time.Now()
	if !e.resumed {
		var err error
		if e.testBefore, e.testObjBef, err = e.testReport(); err != nil {
			return e.fail(fmt.Errorf("evaluating the pre-trained model on test: %w", err))
		}
		if e.plugBefore, err = e.plugin(); err != nil {
			return e.fail(fmt.Errorf("the pre-trained model: %w", err))
		}
		if err := e.refresh(); err != nil {
			return e.fail(err)
		}
		e.valBefore = e.last.Report
	}
	stopped := false
	for e.step < e.cfg.Steps {
		if ctx.Err() != nil || e.applyControls() {
			stopped = true
			break
		}
		if e.state == loop.Paused {
			select {
			case <-e.wake:
			case <-ctx.Done():
			}
			continue
		}
		if e.last == nil || e.step-e.lastRefresh >= e.hyper.Refresh {
			if err := e.checkpoint(false); err != nil {
				return e.fail(err)
			}
			if err := e.refresh(); err != nil {
				return e.fail(err)
			}
			if e.pauseAt >= 0 && e.step >= e.pauseAt {
				e.pauseAt = -1
				e.state = loop.Paused
				e.publish(e.snapshot(loop.KindControl))
				continue
			}
		}
		if err := e.train(); err != nil {
			return e.fail(fmt.Errorf("step %d: %w", e.step, err))
		}
	}
	if stopped {
		return e.stop(start)
	}
	if e.last == nil || e.last.Step != e.step {
		if err := e.refresh(); err != nil {
			return e.fail(err)
		}
	}
	if sum, err = e.summary(e.last.Report, start); err != nil {
		return e.fail(err)
	}
	return e.end(loop.Finished, sum)
}

// stop ends the run where it stands: a checkpoint from which it continues
// exactly, and a summary of the model at this step. It publishes no
// refresh: the evaluation for the summary leaves every state alone.
func (e *Engine) stop(start time.Time) (*loop.Summary, error) {
	val := e.last.Report
	if e.last.Step != e.step {
		ev, err := e.tr.Evaluate(SplitVal, false)
		if err != nil {
			return e.fail(fmt.Errorf("evaluating on validation at step %d: %w", e.step, err))
		}
		if val, err = metric.NewReport(ev.C, e.tail); err != nil {
			return e.fail(fmt.Errorf("validation at step %d: %w", e.step, err))
		}
	}
	sum, err := e.summary(val, start)
	if err != nil {
		return e.fail(err)
	}
	return e.end(loop.Stopped, sum)
}

// end publishes the final snapshot of a run that finished or stopped,
// after the checkpoint it continues from (a finished run's is final).
func (e *Engine) end(state loop.State, sum *loop.Summary) (*loop.Summary, error) {
	e.state = state
	if err := e.checkpoint(state == loop.Finished); err != nil {
		return e.fail(err)
	}
	s := e.snapshot(loop.KindFinal)
	s.Summary = sum
	e.publish(s)
	if state == loop.Stopped {
		return sum, ErrStopped
	}
	return sum, nil
}

// fail publishes the error that ends the run, or, for a Trainer that
// halted, the stop.
func (e *Engine) fail(err error) (*loop.Summary, error) {
	if errors.Is(err, ErrHalt) {
		e.state = loop.Stopped
		e.publish(e.snapshot(loop.KindFinal))
		return nil, &Halted{Step: e.step, Err: err}
	}
	e.state = loop.Failed
	s := e.snapshot(loop.KindError)
	s.Err = err.Error()
	e.publish(s)
	return nil, err
}

func (e *Engine) summary(valAfter metric.Report, start time.Time) (*loop.Summary, error) {
	testAfter, testObjAfter, err := e.testReport()
	if err != nil {
		return nil, fmt.Errorf("evaluating the fine-tuned model on test: %w", err)
	}
	plug, err := e.plugin()
	if err != nil {
		return nil, fmt.Errorf("the fine-tuned model: %w", err)
	}
	return &loop.Summary{
		Steps: e.step, Objective: e.hyper.Objective,
		ValBefore: e.valBefore, ValAfter: valAfter,
		TestBefore: e.testBefore, TestAfter: testAfter,
		TestObjBefore: e.testObjBef, TestObjAfter: testObjAfter,
		Best:         e.best.Clone(),
		PluginBefore: e.plugBefore.Clone(), PluginAfter: plug,
		Seconds: time.Since(start).Seconds(),
		Alpha:   e.hyper.Params(e.K, 0).Alpha,
	}, nil
}

// train takes the next run of steps: up to the next refresh, the next
// scheduled control or the end, and no more than the pacer allows, so that
// controls and stops are taken within a fraction of a second. The result
// does not depend on where runs of steps begin and end.
func (e *Engine) train() error {
	n := min(e.hyper.Refresh-(e.step-e.lastRefresh), e.cfg.Steps-e.step, e.pace.steps())
	if len(e.pending) > 0 && e.pending[0].At > e.step {
		n = min(n, e.pending[0].At-e.step)
	}
	n = max(n, 1)
	h := e.hyper
	r := &TrainRequest{
		Mode: ModeMixup, P: e.last.P, LR: make([]float64, n), Batch: h.Batch, BetaMin: h.BetaMin,
		WeightDecay: e.cfg.WeightDecay, Momentum: e.cfg.Momentum,
	}
	if h.Policy == gain.None {
		r.Mode, r.P = ModeCE, nil
	} else if h.Policy == gain.Resample {
		r.Mode = ModeResample
	} else if sl := e.soft; sl != nil {
		r.Mode, r.P = ModeSoft, nil
		r.Targets, r.Adjust, r.Sampling, r.FreezeBackbone = sl.targets, sl.adjust, sl.sampling, sl.freeze
	}
	for i := range r.LR {
		r.LR[i] = e.lrAt(e.step + i)
	}
	r.Ahead = e.ahead(n)
	e.predictSteps(r.LR, r.Mode)
	t0 := time.Now()
	loss, err := e.tr.Train(r)
	if err != nil {
		return err
	}
	e.pace.done(n, time.Since(t0))
	e.loss = loss
	e.step += n
	s := e.snapshot(loop.KindStep)
	s.StepsPerSec = e.pace.rate()
	e.publish(s)
	return nil
}

// ahead is how many steps after a run of n steps from here will follow
// with the same P, as far as the engine knows: up to the next refresh,
// the next scheduled control or the end of the run.
func (e *Engine) ahead(n int) int {
	next := min(e.lastRefresh+e.hyper.Refresh, e.cfg.Steps)
	if len(e.pending) > 0 {
		next = min(next, e.pending[0].At)
	}
	return max(0, next-(e.step+n))
}

// applyControls takes the inbox at this step boundary. It returns true
// when the run must stop. A stop is not a control of the run's result: it
// is neither counted nor acknowledged, so a stopped and resumed run logs
// exactly what an uninterrupted one does.
func (e *Engine) applyControls() bool {
	e.mu.Lock()
	in := e.inbox
	e.inbox = nil
	e.mu.Unlock()
	stop := false
	for _, c := range in {
		if c.Op == loop.OpStop && c.At <= e.step {
			stop = true
			continue
		}
		// A control whose At has passed takes effect now; the ack says when.
		e.pending = append(e.pending, c)
	}
	sort.SliceStable(e.pending, func(i, j int) bool { return e.pending[i].At < e.pending[j].At })
	n := 0
	for _, c := range e.pending {
		if c.At > e.step {
			e.pending[n] = c
			n++
			continue
		}
		if c.Op == loop.OpStop {
			// Scheduled for this step (a test, or the replay of an old log
			// that recorded its stop as a control): not acknowledged either.
			stop = true
			continue
		}
		// The ack says when it took effect; whether it was scheduled (a
		// replay) or live is no part of the result.
		ack := &loop.Ack{Control: c, Step: e.step}
		ack.Control.At = 0
		switch c.Op {
		case loop.OpPause:
			e.state = loop.Paused
		case loop.OpResume:
			e.state = loop.Running
			e.pauseAt = -1
		case loop.OpStep:
			if e.state == loop.Paused {
				e.state = loop.Running
				e.pauseAt = e.lastRefresh + e.hyper.Refresh
			}
		case loop.OpSet:
			if err := e.set(c.Key, c.Value); err != nil {
				ack.Err = err.Error()
			} else if !c.Auto() {
				e.ad.userSet(e.hyper, c.Key)
			}
		default:
			ack.Err = fmt.Sprintf("unknown control op %d", c.Op)
		}
		e.acks++
		s := e.snapshot(loop.KindControl)
		s.Ack = ack
		e.publish(s)
	}
	e.pending = e.pending[:n]
	return stop
}

// set changes one hyperparameter. Changes that alter G or P (objective,
// its parameters, policy, form, s) recompute them from the last
// evaluation at once, so the next step already samples from the new P.
func (e *Engine) set(key, value string) error {
	h := e.hyper
	if err := h.Set(key, value); err != nil {
		return err
	}
	if err := h.Consistent(); err != nil {
		return err
	}
	e.hyper = h
	if e.last == nil {
		// Not yet evaluated: the refresh that comes first computes G and P
		// with the new values.
		return nil
	}
	if !loop.Reshapes(key) {
		return nil // the steps change, G and P stand
	}
	if loop.ChangesPsi(key) {
		// ψ itself changed: this interval's prediction compares nothing.
		e.iv.valid = false
	}
	if err := e.recompute(); err != nil {
		return err
	}
	if e.step == e.lastRefresh && e.lastRefresh == e.last.Step {
		// No step of the interval is taken yet (a run paused at its
		// refresh, or a control at step 0): the interval opens anew under
		// the new setting, with ψ of the new objective, as Preview
		// forecasts it.
		e.openInterval()
	}
	return nil
}

// Pending is the controls the engine holds for a later step (sent with
// a future At, or restored from a checkpoint), in step order. Call it
// when Run is not running.
func (e *Engine) Pending() []loop.Control { return slices.Clone(e.pending) }

// DropPending forgets the controls held for a later step: a run started
// from another run's checkpoint (a fork) begins from that run's state,
// not its future. Call it before Run.
func (e *Engine) DropPending() { e.pending = nil }

// Acked is how many controls the engine had acknowledged (applied or
// refused) when it was created or resumed: a resumed run re-sends only the
// logged controls after that many, so none is applied twice or lost.
func (e *Engine) Acked() int { return e.acks }

// lr is the cosine-annealed head learning rate at the current step.
func (e *Engine) lr() float64 { return e.lrAt(e.step) }

func (e *Engine) lrAt(step int) float64 { return cosineLR(e.hyper.LR, step, e.cfg.Steps) }

// cosineLR is the head learning rate at step of a run of total steps
// whose base rate is base: cosine-annealed to 0.
func cosineLR(base float64, step, total int) float64 {
	return base * 0.5 * (1 + math.Cos(math.Pi*float64(step)/float64(total)))
}

// Trainer is what the engine drives. Only touch it when Run is not running
// (e.g. to export the head after the run).
func (e *Engine) Trainer() Trainer { return e.tr }

// Package train is the SelMix fine-tuning engine (SPEC §5, paper Alg. 2).
// It owns a model and a data split, runs in the caller's goroutine, reports
// through Streams of immutable Snapshots and takes Controls at step
// boundaries. It knows nothing of terminals or files.
package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"selmix/core/data"
	"selmix/core/gain"
	"selmix/core/metric"
	"selmix/core/model"
)

// Config is a fine-tuning run. Zero values of the non-Hyper fields mean
// the documented defaults.
type Config struct {
	Hyper
	Steps        int     // fine-tuning steps; 0 = 2000
	WeightDecay  float64 // on weights, never biases; 0 = 5e-4 (negative = none)
	Momentum     float64 // SGD momentum; 0 = 0.9 (negative = none)
	Seed         uint64  // sampling seed
	OracleLabels bool    // semi-supervised: draw x2 by the unlabeled set's true labels
	// NormalizeGain divides G by max|G| before P = softmax(s·G).
	NormalizeGain bool
}

func (c Config) withDefaults() Config {
	if c.Steps == 0 {
		c.Steps = 2000
	}
	if c.WeightDecay == 0 {
		c.WeightDecay = 5e-4
	} else if c.WeightDecay < 0 {
		c.WeightDecay = 0
	}
	if c.Momentum == 0 {
		c.Momentum = 0.9
	} else if c.Momentum < 0 {
		c.Momentum = 0
	}
	return c
}

// Engine runs one fine-tuning run. Create with New, Subscribe viewers,
// then call Run once; Send may be called from any goroutine at any time.
type Engine struct {
	cfg   Config
	net   *model.Net
	sp    *data.Split
	K, d  int
	hyper Hyper

	mu    sync.Mutex
	inbox []Control
	subs  []*Stream
	ended bool // Run has returned; guarded by mu
	wake  chan struct{}

	// Owned by Run's goroutine.
	src         *rand.PCG
	rng         *rand.Rand
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
	testObjBef  []float64
	step        int
	state       State
	pending     []Control // controls with a future At, sorted by At
	labeledIdx  [][]int   // labeled indices per class
	partnerSet  *data.Set // where x2 comes from
	partnerIdx  [][]int   // its indices per (pseudo-)class
	cum         []float64 // cumulative P over K² pairs
	gc          gain.Computer
	last        *RefreshStats
	es          evalState
	batch       int // the batch size the model's training graph has
	x1, x2      []float32
	beta        []float32
	y           []int
	feat, logit []float32
}

// New checks that net and sp fit together and returns an engine.
func New(cfg Config, net *model.Net, sp *data.Split) (*Engine, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Hyper.Validate(); err != nil {
		return nil, err
	}
	if cfg.Steps < 1 {
		return nil, fmt.Errorf("steps: want ≥ 1, got %d", cfg.Steps)
	}
	mc := net.Config()
	if sp.K != mc.Classes {
		return nil, fmt.Errorf("model has %d classes, data has %d", mc.Classes, sp.K)
	}
	for name, s := range map[string]*data.Set{"labeled": &sp.Labeled, "validation": &sp.Val, "test": &sp.Test} {
		if s.N == 0 {
			return nil, fmt.Errorf("%s set is empty", name)
		}
		if s.Dim != mc.In {
			return nil, fmt.Errorf("%s set has %d inputs per sample, model expects %d", name, s.Dim, mc.In)
		}
	}
	e := &Engine{
		cfg: cfg, net: net, sp: sp, K: sp.K, d: net.Dim(), hyper: cfg.Hyper,
		wake:    make(chan struct{}, 1),
		src:     rand.NewPCG(cfg.Seed, 0x5e1a1c),
		state:   Running,
		pauseAt: -1,
		loss:    math.NaN(),
	}
	e.rng = rand.New(e.src)
	e.labeledIdx = sp.Labeled.ClassIndex(sp.K)
	for k, idx := range e.labeledIdx {
		if len(idx) == 0 {
			return nil, fmt.Errorf("labeled set has no sample of class %d (%s)", k, className(sp, k))
		}
	}
	return e, nil
}

func className(sp *data.Split, k int) string {
	if k < len(sp.ClassNames) {
		return sp.ClassNames[k]
	}
	return fmt.Sprint(k)
}

// Subscribe returns a new stream of this run's snapshots. Call before Run
// to see every event.
func (e *Engine) Subscribe() *Stream {
	s := NewStream()
	e.mu.Lock()
	if e.ended {
		s.Close() // nothing more will be published
	} else {
		e.subs = append(e.subs, s)
	}
	e.mu.Unlock()
	return s
}

// Unsubscribe stops publishing to st (a viewer that went away) and closes
// it.
func (e *Engine) Unsubscribe(st *Stream) {
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
func (e *Engine) Send(c Control) {
	e.mu.Lock()
	e.inbox = append(e.inbox, c)
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

func (e *Engine) publish(s Snapshot) {
	e.mu.Lock()
	subs := e.subs
	e.mu.Unlock()
	for _, st := range subs {
		st.Publish(s)
	}
}

func (e *Engine) snapshot(k Kind) Snapshot {
	return Snapshot{Kind: k, Step: e.step, Total: e.cfg.Steps, State: e.state, Hyper: e.hyper, Refresh: e.last, Loss: e.loss, LR: e.lr()}
}

// ErrStopped is returned by Run when a Stop control or the context ended
// the run early; the summary is still valid.
var ErrStopped = errors.New("run stopped")

// Run fine-tunes until the step budget is spent, a Stop arrives or ctx
// ends. It returns the summary of what was reached.
func (e *Engine) Run(ctx context.Context) (sum *Summary, err error) {
	defer func() {
		e.mu.Lock()
		e.ended = true
		for _, s := range e.subs {
			s.Close()
		}
		e.mu.Unlock()
	}()
	fail := func(err error) (*Summary, error) {
		e.state = Failed
		s := e.snapshot(KindError)
		s.Err = err.Error()
		e.publish(s)
		return nil, err
	}
	start := time.Now()
	if !e.resumed {
		var err error
		if e.testBefore, e.testObjBef, err = e.testReport(); err != nil {
			return fail(fmt.Errorf("evaluating the pre-trained model on test: %w", err))
		}
		if err := e.refresh(); err != nil {
			return fail(err)
		}
		e.valBefore = e.last.Report
	}
	var stopped bool
	tick, ticks := time.Now(), 0
	for e.step < e.cfg.Steps && !stopped {
		if ctx.Err() != nil {
			stopped = true
			break
		}
		stopped = e.applyControls()
		if stopped {
			break
		}
		if e.state == Paused {
			select {
			case <-e.wake:
			case <-ctx.Done():
			}
			continue
		}
		if e.last == nil || e.step-e.lastRefresh >= e.hyper.Refresh {
			if err := e.checkpoint(); err != nil {
				return fail(err)
			}
			if err := e.refresh(); err != nil {
				return fail(err)
			}
			if e.pauseAt >= 0 && e.step >= e.pauseAt {
				e.pauseAt = -1
				e.state = Paused
				e.publish(e.snapshot(KindControl))
				continue
			}
		}
		if e.loss, err = e.sgdStep(); err != nil {
			return fail(fmt.Errorf("step %d: %w", e.step, err))
		}
		e.step++
		ticks++
		s := e.snapshot(KindStep)
		if dt := time.Since(tick).Seconds(); dt > 0 {
			s.StepsPerSec = float64(ticks) / dt
			if dt > 2 {
				tick, ticks = time.Now(), 0
			}
		}
		e.publish(s)
	}
	if e.last == nil || e.last.Step != e.step {
		if err := e.refresh(); err != nil {
			return fail(err)
		}
	}
	testAfter, testObjAfter, err := e.testReport()
	if err != nil {
		return fail(fmt.Errorf("evaluating the fine-tuned model on test: %w", err))
	}
	sum = &Summary{
		Steps: e.step, Objective: e.hyper.Objective,
		ValBefore: e.valBefore, ValAfter: e.last.Report,
		TestBefore: e.testBefore, TestAfter: testAfter,
		TestObjBefore: e.testObjBef, TestObjAfter: testObjAfter,
		Seconds: time.Since(start).Seconds(),
	}
	e.state = Finished
	if stopped {
		e.state = Stopped
		err = ErrStopped
	}
	if cerr := e.checkpoint(); cerr != nil {
		return fail(cerr)
	}
	s := e.snapshot(KindFinal)
	s.Summary = sum
	e.publish(s)
	return sum, err
}

// applyControls takes the inbox at this step boundary. It returns true
// when the run must stop.
func (e *Engine) applyControls() bool {
	e.mu.Lock()
	in := e.inbox
	e.inbox = nil
	e.mu.Unlock()
	for _, c := range in {
		// A control whose At has passed takes effect now; the ack says when.
		e.pending = append(e.pending, c)
	}
	sort.SliceStable(e.pending, func(i, j int) bool { return e.pending[i].At < e.pending[j].At })
	stop := false
	n := 0
	for _, c := range e.pending {
		if c.At > e.step {
			e.pending[n] = c
			n++
			continue
		}
		ack := &Ack{Control: c, Step: e.step}
		switch c.Op {
		case OpPause:
			e.state = Paused
		case OpResume:
			e.state = Running
			e.pauseAt = -1
		case OpStep:
			if e.state == Paused {
				e.state = Running
				e.pauseAt = e.lastRefresh + e.hyper.Refresh
			}
		case OpStop:
			stop = true
		case OpSet:
			if err := e.set(c.Key, c.Value); err != nil {
				ack.Err = err.Error()
			}
		default:
			ack.Err = fmt.Sprintf("unknown control op %d", c.Op)
		}
		e.acks++
		s := e.snapshot(KindControl)
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
	e.hyper = h
	if e.last == nil {
		// Resumed or forked and not yet evaluated: the refresh that comes
		// first computes G and P with the new values.
		return nil
	}
	switch key {
	case "lr", "refresh", "batch":
		return nil
	}
	return e.recompute()
}

// Acked is how many controls the engine had acknowledged (applied or
// refused) when it was created or resumed: a resumed run re-sends only the
// logged controls after that many, so none is applied twice or lost.
func (e *Engine) Acked() int { return e.acks }

// lr is the cosine-annealed head learning rate at the current step.
func (e *Engine) lr() float64 {
	return e.hyper.LR * 0.5 * (1 + math.Cos(math.Pi*float64(e.step)/float64(e.cfg.Steps)))
}

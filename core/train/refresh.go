package train

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"selmix/core/gain"
	"selmix/core/loop"
	"selmix/core/metric"
)

// evalState is what a refresh measured; recompute derives G and P from it
// again when a hyperparameter changes between refreshes, and a checkpoint
// keeps it so a resumed run samples from the same P.
type evalState struct {
	C, Z *mat.Dense
	W    *mat.Dense
	b    []float64
	// sm is the samples the samples form read at this evaluation: nil
	// until a recompute under that form first needs them.
	sm *gain.SampleSet
}

func (e *Engine) testReport() (metric.Report, []float64, error) {
	ev, err := e.tr.Evaluate(SplitTest, false)
	if err != nil {
		return metric.Report{}, nil, err
	}
	if err := e.checkEval(ev, false); err != nil {
		return metric.Report{}, nil, fmt.Errorf("test: %w", err)
	}
	r, err := metric.NewReport(ev.C, e.tail)
	if err != nil {
		return metric.Report{}, nil, err
	}
	v, err := metric.Values(ev.C, e.tail, e.params())
	return r, v, err
}

// checkEval refuses statistics of the wrong shape or with non-finite
// values: a worker in another process sends them.
func (e *Engine) checkEval(ev *Eval, centroids bool) error {
	K, d := e.K, e.d
	if ev.C == nil {
		return fmt.Errorf("no confusion matrix")
	}
	if r, c := ev.C.Dims(); r != K || c != K {
		return fmt.Errorf("confusion matrix is %d×%d, want %d×%d", r, c, K, K)
	}
	if centroids {
		if ev.Z == nil || ev.W == nil || len(ev.B) != K {
			return fmt.Errorf("centroids or head missing")
		}
		if r, c := ev.Z.Dims(); r != K || c != d {
			return fmt.Errorf("centroids Z are %d×%d, want %d×%d", r, c, K, d)
		}
		if r, c := ev.W.Dims(); r != d || c != K {
			return fmt.Errorf("head W is %d×%d, want %d×%d", r, c, d, K)
		}
	}
	for _, a := range []struct {
		name string
		v    []float64
	}{{"C", raw(ev.C)}, {"Z", raw(ev.Z)}, {"W", raw(ev.W)}, {"b", ev.B}} {
		for i, x := range a.v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("%s[%d] is %v", a.name, i, x)
			}
		}
	}
	return nil
}

func raw(m *mat.Dense) []float64 {
	if m == nil {
		return nil
	}
	return m.RawMatrix().Data
}

// refresh is the top of Alg. 2's outer loop: evaluate on validation,
// recompute multipliers, D, G and P, and refresh pseudo-labels.
func (e *Engine) refresh() error {
	ev, err := e.tr.Evaluate(SplitVal, true)
	if err != nil {
		return fmt.Errorf("evaluating on validation at step %d: %w", e.step, err)
	}
	if err := e.checkEval(ev, true); err != nil {
		return fmt.Errorf("validation statistics at step %d: %w", e.step, err)
	}
	e.es = evalState{C: ev.C, Z: ev.Z, W: ev.W, b: ev.B}
	e.lastRefresh = e.step
	if err := e.integrate(); err != nil {
		return fmt.Errorf("validation at step %d: %w", e.step, err)
	}
	e.refreshes++
	if e.info.Unlabeled > 0 {
		if err := e.tr.Pseudo(e.cfg.OracleLabels); err != nil {
			return fmt.Errorf("pseudo-labelling at step %d: %w", e.step, err)
		}
	}
	if err := e.recompute(); err != nil {
		return err
	}
	e.last.Predicted, e.last.Realised = e.closeInterval(e.last.Psi)
	obj, psi, aimed, val := e.hyper.Objective, e.last.Psi, e.hyper.Aimed(), e.last.Report
	e.last.Best = e.newTop(obj, psi)
	auto := e.adapt()
	e.openInterval()
	s := e.snapshot(loop.KindRefresh)
	s.System = ev.Sys
	e.publish(s)
	for _, c := range auto {
		ack := &loop.Ack{Control: c, Step: e.step}
		if err := e.set(c.Key, c.Value); err != nil {
			ack.Err = err.Error() // a bound of the controller's own; never expected
		}
		e.acks++
		cs := e.snapshot(loop.KindControl)
		cs.Ack = ack
		e.publish(cs)
	}
	// Judged on what this refresh published; kept after its automatic
	// changes, so the best checkpoint continues as the run did.
	if !e.last.Best {
		return nil
	}
	return e.judgeBest(obj, psi, aimed, val)
}

// recompute derives the multipliers, D, G and P from the last evaluation
// under the current hyperparameters. It publishes nothing: a refresh
// publishes its snapshot, and a control's acknowledgement carries the new
// G and P (a second "refresh" event would show the old evaluation's
// metrics at a later step).
func (e *Engine) recompute() error {
	if e.hyper.Form == gain.Samples && e.es.sm == nil {
		sm, err := e.samples()
		if err != nil {
			return fmt.Errorf("samples for the gain at step %d: %w", e.step, err)
		}
		e.es.sm = sm
		e.bs = nil
	}
	b := e.basis()
	d, err := Decide(&e.gc, b.Stats, e.hyper)
	if err != nil {
		return fmt.Errorf("validation at step %d: %w", e.step, err)
	}
	if e.soft, err = e.softLossFor(e.hyper, d.Eval); err != nil {
		return fmt.Errorf("validation at step %d: %w", e.step, err)
	}
	old := e.last
	e.last = &loop.Refresh{
		Step: e.lastRefresh, Report: d.Eval.Report, Objectives: d.Objectives, Psi: d.Eval.Psi,
		Lambda: d.Eval.Lambda, Aims: d.Eval.Aims,
		G: d.G.RawMatrix().Data,
		P: d.P.RawMatrix().Data,
		K: e.K, S: e.hyper.S,
		Basis: b,
	}
	if old != nil && old.Step == e.lastRefresh {
		// A control recomputed G and P from the same evaluation: the
		// interval it closed keeps its figures.
		e.last.Predicted, e.last.Realised = old.Predicted, old.Realised
	}
	return nil
}

// basis is the last evaluation as a Basis, made once per evaluation: the
// Refreshes published from it share it (its arrays are the trainer's,
// fresh at every evaluation and never written again).
func (e *Engine) basis() *loop.Basis {
	es := e.es
	if b := e.bs; b != nil && b.Step == e.lastRefresh && b.C == es.C {
		return b
	}
	e.bs = &loop.Basis{
		Stats: loop.Stats{C: es.C, Z: es.Z, W: es.W, B: es.b, Tail: e.tail, N: e.info.Val, NTest: e.info.Test, Samples: es.sm, Integral: e.integral},
		Step:  e.lastRefresh, Steps: e.cfg.Steps, Momentum: e.cfg.Momentum,
	}
	return e.bs
}

// Decision is what a refresh derives from its statistics.
type Decision struct {
	Eval       metric.Eval // ψ, its multipliers, D = ∂ψ/∂C̃ and the report
	Objectives []float64   // every objective's ψ, metric.Objectives() order
	G, P       *mat.Dense
}

// Decide derives the multipliers, D, G and P from a validation evaluation
// under h: the refresh of Alg. 2 and `selmix gain` are this one function.
// gc holds reusable workspace (nil allocates).
func Decide(gc *gain.Computer, st loop.Stats, h loop.Hyper) (*Decision, error) {
	if gc == nil {
		gc = new(gain.Computer)
	}
	K, _ := st.C.Dims()
	p := h.ParamsFor(K, st.N, st.NTest)
	var ev metric.Eval
	var I []float64
	if h.Memory == loop.MemoryIntegral {
		I = st.Integral
	}
	if err := metric.EvaluateMemory(&ev, h.Objective, st.C, st.Tail, p, fitIntegral(I, h.Objective, K)); err != nil {
		return nil, err
	}
	if I != nil {
		// ψ itself is the memoryless one: the memory only steers (D, G),
		// while ψ — what is shown, predicted and judged best — keeps one
		// scale from refresh to refresh.
		plain, err := metric.Evaluate(h.Objective, st.C, st.Tail, p)
		if err != nil {
			return nil, err
		}
		ev.Psi = plain.Psi
	}
	objs, err := metric.Values(st.C, st.Tail, p)
	if err != nil {
		return nil, err
	}
	G := mat.NewDense(K, K, nil)
	if h.Form == gain.Samples {
		if err := samplesGain(G, st, h, ev, p); err != nil {
			return nil, fmt.Errorf("gain: %w", err)
		}
	} else if err := gc.Gain(G, ev.D, st.Z, st.W, st.B, gain.BetaBar(h.BetaMin), h.Form); err != nil {
		return nil, fmt.Errorf("gain: %w", err)
	}
	P := mat.NewDense(K, K, nil)
	gain.Distribution(P, gain.Normalized(G, h.GainNorm), h.S, h.Policy)
	return &Decision{Eval: ev, Objectives: objs, G: G, P: P}, nil
}

// samplesGain is the samples form's G: D = ∂ψ/∂C^soft at the validation
// samples' soft confusion matrix, the multipliers those of the hard one
// (ev), then one head step on mixed samples (gain.Estimate).
func samplesGain(G *mat.Dense, st loop.Stats, h loop.Hyper, ev metric.Eval, p metric.Params) error {
	if st.Samples == nil {
		return fmt.Errorf("form samples: no samples (the trainer cannot give features)")
	}
	est, err := gain.NewEstimate(st.Samples, st.W, st.B)
	if err != nil {
		return err
	}
	var D mat.Dense
	if err := metric.Linearize(&D, h.Objective, est.Soft(), st.Tail, ev.Lambda, p); err != nil {
		return err
	}
	return est.Gain(G, &D, gain.SampleOpts{BetaMin: h.BetaMin})
}

// fitIntegral is I where it has one term per coverage multiplier of obj,
// else nil: memory kept under another objective does not carry over.
func fitIntegral(I []float64, obj metric.Objective, K int) []float64 {
	s, _ := obj.Spec()
	n := 0
	switch s.Constraint {
	case metric.ClassCoverage:
		n = K
	case metric.GroupCoverage:
		n = 2
	}
	if n == 0 || len(I) != n {
		return nil
	}
	return I
}

// integrate is a refresh's step of the coverage multipliers' memory under
// multipliers = integral, from the evaluation just taken (e.es): each term
// grows with its constraint's shortfall (metric.Integrate). Under
// memoryless the memory stays as it is, so switching back and forth keeps it.
func (e *Engine) integrate() error {
	h := e.hyper
	if h.Memory != loop.MemoryIntegral {
		return nil
	}
	p := e.params()
	var ev metric.Eval
	if err := metric.EvaluateMemory(&ev, h.Objective, e.es.C, e.tail, p, nil); err != nil {
		return err
	}
	e.integral = metric.Integrate(fitIntegral(e.integral, h.Objective, e.K), ev, h.LamRate, p)
	return nil
}

// samples draws the samples form's training samples for the evaluation
// just taken: Draws samples of each class, chosen by the run's seed and
// the step (without replacement where the class has that many), and
// reads their features and the validation set's from the trainer.
func (e *Engine) samples() (*gain.SampleSet, error) {
	f, ok := e.tr.(Featurer)
	if !ok || !CanFeature(e.tr) {
		return nil, ErrNoFeatures
	}
	X, _, y, err := f.Features(SplitVal)
	if err != nil {
		return nil, err
	}
	S := e.hyper.Draws
	pick := make([][]int, e.K)
	for k := range e.K {
		n := 0
		if k < len(e.info.TrainCounts) {
			n = e.info.TrainCounts[k]
		}
		if n == 0 {
			return nil, fmt.Errorf("class %d has no training samples to draw", k)
		}
		pick[k] = drawSamples(e.cfg.Seed, uint64(e.step), k, n, S)
	}
	pool, err := f.TrainFeatures(pick)
	if err != nil {
		return nil, err
	}
	if r, c := X.Dims(); r != len(y) || c != e.d || r == 0 {
		return nil, fmt.Errorf("validation features are %d×%d with %d labels, want %d columns", r, c, len(y), e.d)
	}
	if r, c := pool.Dims(); r != e.K*S || c != e.d {
		return nil, fmt.Errorf("training features are %d×%d, want %d×%d", r, c, e.K*S, e.d)
	}
	// Rounded to float32, as a checkpoint keeps them, so a resumed run
	// computes from the same values; the validation logits are computed
	// here from them and the head, for the same reason.
	roundFloat32(raw(X))
	roundFloat32(raw(pool))
	return &gain.SampleSet{Val: X, Y: y, Pool: pool, S: S}, nil
}

func roundFloat32(v []float64) {
	for i, x := range v {
		v[i] = float64(float32(x))
	}
}

// ErrNoFeatures is a trainer that cannot give features (not a Featurer,
// or a worker whose protocol version has no features request) asked for
// the samples form.
var ErrNoFeatures = errors.New("the trainer cannot give the samples' features this form needs")

// drawSamples is S indices among n, without replacement where n ≥ S, from
// a generator seeded by (seed, step, class).
func drawSamples(seed, step uint64, class, n, S int) []int {
	r := rand.New(rand.NewPCG(seed, step<<20^uint64(class)))
	out := make([]int, S)
	if n >= S {
		perm := r.Perm(n)
		copy(out, perm[:S])
		return out
	}
	for i := range out {
		out[i] = r.IntN(n)
	}
	return out
}

// params is the objective's parameters for this run's sizes.
func (e *Engine) params() metric.Params { return e.hyper.ParamsFor(e.K, e.info.Val, e.info.Test) }

package model

import (
	"fmt"
	"math"

	"gorgonia.org/tensor"
)

// StepOpts are the hyperparameters of one SGD step. The update is PyTorch's
// SGD with momentum (no dampening, no Nesterov):
//
//	g ← ∇L + λ·w   (λ = WeightDecay, weights only, never biases)
//	v ← μ·v + g    (μ = Momentum)
//	w ← w − η·v    (η = LRHead for head.w/head.b, LRBackbone otherwise)
//
// Zero values mean zero; the caller supplies defaults (e.g. μ = 0.9).
// FreezeBackbone leaves the backbone's weights and momentum as they are (a
// zero LRBackbone would still move the momentum, which a later unfrozen step
// would then apply).
type StepOpts struct {
	LRHead, LRBackbone, WeightDecay, Momentum float32
	FreezeBackbone                            bool
}

// MixStep takes one SGD step of SelMix on B mixed pairs:
//
//	f_i = β_i g(x1_i) + (1−β_i) g(x2_i),  loss = mean_i CE(Wᵀf_i + b, y_i).
//
// x1 and x2 are B×In row-major, beta and y have B entries. x1 and x2 go
// through the backbone as one 2B-row batch, so gradients flow into the
// backbone through both. It panics if the lengths do not match Batch; it
// returns an error for a label outside [0, K) or a non-finite loss, in which
// case the weights are left unchanged.
func (n *Net) MixStep(x1, x2, beta []float32, y []int, o StepOpts) (loss float64, err error) {
	if n.fastHead() {
		return n.headMix(x1, x2, beta, y, o)
	}
	if err := n.runMix(x1, x2, beta, y); err != nil {
		return 0, err
	}
	return n.finish(n.mix, o)
}

// CEStep takes one SGD step on loss = mean_i CE(logits_i + adj, y_i), where x
// is B×In row-major and adj has K entries (a logit adjustment such as
// τ·log prior) or is nil for plain cross-entropy. Panics and errors as for
// MixStep.
func (n *Net) CEStep(x []float32, y []int, adj []float32, o StepOpts) (loss float64, err error) {
	if n.fastHead() {
		return n.headCE(x, y, adj, o)
	}
	if err := n.runCE(x, y, adj); err != nil {
		return 0, err
	}
	return n.finish(n.ce, o)
}

// SoftStep takes one SGD step on the soft-target loss
//
//	loss = mean_i −Σ_j T_{y_i j}·log softmax(logits_i + adj)_j
//
// where targets is the K×K matrix T row-major (row y: the target weights
// of a sample labelled y, not necessarily summing to 1), x is B×In
// row-major and adj has K entries or is nil. With T = I it is CEStep's loss
// (docs/method.md, "Baselines"). Panics and errors as for MixStep.
func (n *Net) SoftStep(x []float32, y []int, targets, adj []float32, o StepOpts) (loss float64, err error) {
	if k := n.cfg.Classes; len(targets) != k*k {
		panic(fmt.Sprintf("model: SoftStep wants %d×%d targets, got %d", k, k, len(targets)))
	}
	if n.fastHead() {
		B, d, k := n.cfg.Batch, n.d, n.cfg.Classes
		if len(y) != B || len(x) != B*d || (adj != nil && len(adj) != k) {
			panic(fmt.Sprintf("model: SoftStep wants %d labels, %d×%d inputs and nil or %d adjustments, got %d, %d and %d",
				B, B, d, k, len(y), len(x), len(adj)))
		}
		return n.headStep(x, y, targets, adj, o)
	}
	if err := n.runSoft(x, y, targets, adj); err != nil {
		return 0, err
	}
	return n.finish(n.ce, o)
}

func (n *Net) runMix(x1, x2, beta []float32, y []int) error {
	b, in := n.cfg.Batch, n.cfg.In
	if len(y) != b || len(beta) != b || len(x1) != b*in || len(x2) != b*in {
		panic(fmt.Sprintf("model: MixStep wants %d labels, %d betas and 2×%d×%d inputs, got %d, %d, %d and %d",
			b, b, b, in, len(y), len(beta), len(x1), len(x2)))
	}
	t, err := n.trainGraph(&n.mix, true)
	if err != nil {
		return err
	}
	fill(t.x, 0, x1)
	fill(t.x, b*in, x2)
	if err := setOneHot(t.y, y, n.cfg.Classes); err != nil {
		return err
	}
	d := n.d
	switch bm := t.bm.Data().(type) {
	case []float32:
		cm := t.cm.Float32s()
		for i, v := range beta {
			for j := range d {
				bm[i*d+j], cm[i*d+j] = v, 1-v
			}
		}
	case []float64:
		cm := t.cm.Float64s()
		for i, v := range beta {
			for j := range d {
				bm[i*d+j], cm[i*d+j] = float64(v), 1-float64(v)
			}
		}
	}
	return run(t)
}

func (n *Net) runCE(x []float32, y []int, adj []float32) error {
	return n.runSoft(x, y, nil, adj)
}

// runSoft is runCE with the target rows of targets (K×K) in place of
// one-hot rows; nil targets mean one-hot. The graph is CEStep's: its loss op
// takes dense target rows.
func (n *Net) runSoft(x []float32, y []int, targets, adj []float32) error {
	b, in, k := n.cfg.Batch, n.cfg.In, n.cfg.Classes
	if len(y) != b || len(x) != b*in || (adj != nil && len(adj) != k) {
		panic(fmt.Sprintf("model: CEStep wants %d labels, %d×%d inputs and nil or %d adjustments, got %d, %d and %d",
			b, b, in, k, len(y), len(x), len(adj)))
	}
	t, err := n.trainGraph(&n.ce, false)
	if err != nil {
		return err
	}
	fill(t.x, 0, x)
	if err := setOneHot(t.y, y, k); err != nil {
		return err
	}
	if targets != nil {
		for i, c := range y {
			fill(t.y, i*k, targets[c*k:(c+1)*k])
		}
	}
	if adj == nil {
		t.adj.Zero()
	} else {
		for i := range b {
			fill(t.adj, i*k, adj)
		}
	}
	return run(t)
}

// trainGraph is *g, built on first use: a Net that only evaluates never
// builds a training graph.
func (n *Net) trainGraph(g **trainGraph, mix bool) (*trainGraph, error) {
	if *g == nil {
		t, err := n.buildTrain(mix)
		if err != nil {
			return nil, err
		}
		*g = t
	}
	return *g, nil
}

func setOneHot(t *tensor.Dense, y []int, k int) error {
	t.Zero()
	for i, c := range y {
		if c < 0 || c >= k {
			return fmt.Errorf("model: label %d at row %d is outside [0, %d)", c, i, k)
		}
		switch v := t.Data().(type) {
		case []float32:
			v[i*k+c] = 1
		case []float64:
			v[i*k+c] = 1
		}
	}
	return nil
}

// run executes one forward/backward pass; the loss and gradients are then in
// t.loss and t.grads.
func run(t *trainGraph) error {
	t.vm.Reset()
	t.loss = nil
	if err := t.vm.RunAll(); err != nil {
		return fmt.Errorf("model: running graph: %w", err)
	}
	return nil
}

// finish checks the loss of the pass just run and applies the SGD update.
func (n *Net) finish(t *trainGraph, o StepOpts) (float64, error) {
	loss, err := scalarOf(t.loss)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return loss, fmt.Errorf("model: loss is %v; weights left unchanged", loss)
	}
	for i, p := range n.params {
		if o.FreezeBackbone && !p.head {
			continue
		}
		lr := o.LRBackbone
		if p.head {
			lr = o.LRHead
		}
		wd := o.WeightDecay
		if !p.decay {
			wd = 0
		}
		switch w := p.val.Data().(type) {
		case []float32:
			sgd(w, p.mom.Float32s(), t.grads[i].(*tensor.Dense).Float32s(), lr, wd, o.Momentum)
		case []float64:
			sgd(w, p.mom.Float64s(), t.grads[i].(*tensor.Dense).Float64s(), float64(lr), float64(wd), float64(o.Momentum))
		}
	}
	return loss, nil
}

func sgd[T float32 | float64](w, v, g []T, lr, wd, mu T) {
	v, g = v[:len(w)], g[:len(w)]
	for i := range w {
		v[i] = mu*v[i] + g[i] + wd*w[i]
		w[i] -= lr * v[i]
	}
}

// lossGrad runs one pass without updating and returns the loss and copies of
// the gradients (n.params order). mix selects MixStep's loss (x2, beta used)
// or CEStep's (adj used), with the soft targets if not nil. For tests.
func (n *Net) lossGrad(mix bool, x1, x2, beta []float32, y []int, adj, targets []float32) (float64, [][]float64, error) {
	var t *trainGraph
	var err error
	if mix {
		err, t = n.runMix(x1, x2, beta, y), n.mix
	} else {
		err, t = n.runSoft(x1, y, targets, adj), n.ce
	}
	if err != nil {
		return 0, nil, err
	}
	loss, err := scalarOf(t.loss)
	if err != nil {
		return 0, nil, err
	}
	grads := make([][]float64, len(t.grads))
	for i, g := range t.grads {
		grads[i] = toF64(g.(*tensor.Dense))
	}
	return loss, grads, nil
}

// Forward computes features (rows×d) and logits (rows×K) of x (rows×In
// row-major) with the evaluation graph, EvalBatch rows at a time (the last
// chunk zero-padded). feat or logits may be nil if not wanted; otherwise
// their lengths must match (it panics if not).
func (n *Net) Forward(feat, logits []float32, x []float32, rows int) error {
	in, d, k := n.cfg.In, n.d, n.cfg.Classes
	if rows < 0 || len(x) != rows*in || (feat != nil && len(feat) != rows*d) || (logits != nil && len(logits) != rows*k) {
		panic(fmt.Sprintf("model: Forward of %d rows wants %d inputs, %d features and %d logits, got %d, %d and %d",
			rows, rows*in, rows*d, rows*k, len(x), len(feat), len(logits)))
	}
	if n.fastHead() {
		n.headForward(feat, logits, x, rows)
		return nil
	}
	if n.eval == nil {
		e, err := n.buildEval()
		if err != nil {
			return err
		}
		n.eval = e
	}
	e := n.eval
	for lo := 0; lo < rows; lo += e.rows {
		hi := min(lo+e.rows, rows)
		fill(e.x, 0, x[lo*in:hi*in])
		if hi-lo < e.rows {
			zeroFrom(e.x, (hi-lo)*in)
		}
		e.vm.Reset()
		if err := e.vm.RunAll(); err != nil {
			return fmt.Errorf("model: running evaluation graph: %w", err)
		}
		if feat != nil {
			copyOut(feat[lo*d:hi*d], e.feat.(*tensor.Dense))
		}
		if logits != nil {
			copyOut(logits[lo*k:hi*k], e.logits.(*tensor.Dense))
		}
	}
	return nil
}

func zeroFrom(t *tensor.Dense, off int) {
	switch v := t.Data().(type) {
	case []float32:
		clear(v[off:])
	case []float64:
		clear(v[off:])
	}
}

func copyOut(dst []float32, t *tensor.Dense) {
	switch v := t.Data().(type) {
	case []float32:
		copy(dst, v)
	case []float64:
		for i := range dst {
			dst[i] = float32(v[i])
		}
	}
}

package train

import (
	"sort"

	"selmix/core/gain"
	"selmix/core/model"
)

// sgdStep is Alg. 2's inner step: draw B label pairs from P, a labeled x1
// of class y1 and a partner x2 of class y2, β ~ U[β_min, 1], and take one
// SGD step on CE(Wᵀ(β g(x1) + (1−β) g(x2)) + b, y1). Policy none takes a
// plain CE step on a uniform labeled batch instead.
func (e *Engine) sgdStep() (float64, error) {
	h := e.hyper
	B := h.Batch
	if e.batch != B {
		if err := e.net.SetBatch(B); err != nil {
			return 0, err
		}
		e.batch = B
	}
	in := e.sp.Labeled.Dim
	if len(e.y) != B {
		e.x1, e.x2 = make([]float32, B*in), make([]float32, B*in)
		e.beta, e.y = make([]float32, B), make([]int, B)
	}
	lr := e.lr()
	o := model.StepOpts{
		LRHead: float32(lr), LRBackbone: float32(lr / 10),
		WeightDecay: float32(e.cfg.WeightDecay), Momentum: float32(e.cfg.Momentum),
	}
	lab := &e.sp.Labeled
	if h.Policy == gain.None {
		for i := 0; i < B; i++ {
			j := e.rng.IntN(lab.N)
			copy(e.x1[i*in:(i+1)*in], lab.Row(j))
			e.y[i] = lab.Y[j]
		}
		return e.net.CEStep(e.x1, e.y, nil, o)
	}
	K := e.K
	for i := 0; i < B; i++ {
		pair := e.drawPair()
		y1, y2 := pair/K, pair%K
		idx1 := e.labeledIdx[y1]
		copy(e.x1[i*in:(i+1)*in], lab.Row(idx1[e.rng.IntN(len(idx1))]))
		ps, idx2 := e.partnerSet, e.partnerIdx[y2]
		if len(idx2) == 0 {
			// No unlabeled sample carries pseudo-label y2 yet.
			ps, idx2 = lab, e.labeledIdx[y2]
		}
		copy(e.x2[i*in:(i+1)*in], ps.Row(idx2[e.rng.IntN(len(idx2))]))
		e.beta[i] = float32(h.BetaMin + (1-h.BetaMin)*e.rng.Float64())
		e.y[i] = y1
	}
	return e.net.MixStep(e.x1, e.x2, e.beta, e.y, o)
}

// drawPair draws a flat pair index i·K+j from the cumulative P: the first
// pair whose cumulative mass exceeds u, so a pair of zero probability is
// never drawn.
func (e *Engine) drawPair() int {
	total := e.cum[len(e.cum)-1]
	u := e.rng.Float64() * total
	pair := sort.Search(len(e.cum), func(k int) bool { return e.cum[k] > u })
	if pair == len(e.cum) {
		pair = len(e.cum) - 1
	}
	return pair
}

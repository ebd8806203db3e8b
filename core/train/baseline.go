package train

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"selmix/core/gain"
	"selmix/core/loop"
	"selmix/core/metric"
)

// The paper's baselines as fine-tuning losses (docs/method.md,
// "Baselines"): CSST's consistent cost-sensitive loss for the objective's
// linearisation, and MiSLAS stage 2's label-aware smoothing. Both are a
// soft-target step (ModeSoft) with their own targets and logit adjustment.

// csstFloor bounds the diagonal of L below, relative to its largest entry,
// before its log: a class whose recall weight underflowed (a soft-min
// weight of e^−40) would otherwise get an infinite adjustment. 1e-6 caps
// the adjustments' spread at log 1e6 ≈ 13.8.
const csstFloor = 1e-6

// CSSTLoss returns the consistent loss of the linear metric Σ_ij L_ij C_ij
// (Narasimhan & Menon 2021, as CSST uses it): with D = diag(L_jj), clamped
// below at csstFloor·max_j L_jj, and M = L·D⁻¹,
//
//	loss(y, h) = −Σ_j M_yj·log softmax(h − log diag(D))_j,
//
// i.e. the K×K targets M (row-major) and the adjustment a_j = −log D_jj.
// It returns an error if L holds a non-finite or negative value or its
// diagonal has no positive entry.
func CSSTLoss(L mat.Matrix) (targets, adjust []float64, err error) {
	K, c := L.Dims()
	if K != c {
		panic(fmt.Sprintf("train: L is %d×%d, want square", K, c))
	}
	var dmax float64
	for i := range K {
		for j := range K {
			if v := L.At(i, j); math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return nil, nil, fmt.Errorf("csst: linear metric L[%d,%d] = %v, want finite and ≥ 0", i, j, v)
			}
		}
		dmax = max(dmax, L.At(i, i))
	}
	if !(dmax > 0) {
		return nil, nil, fmt.Errorf("csst: linear metric has no positive diagonal entry")
	}
	diag := make([]float64, K)
	adjust = make([]float64, K)
	for j := range K {
		diag[j] = max(L.At(j, j), csstFloor*dmax)
		adjust[j] = -math.Log(diag[j])
	}
	targets = make([]float64, K*K)
	for i := range K {
		for j := range K {
			targets[i*K+j] = L.At(i, j) / diag[j]
		}
	}
	return targets, adjust, nil
}

// CSSTObjectiveLoss is CSSTLoss of obj's linearisation at the confusion
// matrix C, with obj's own multipliers at C (memoryless, as a refresh
// computes them). obj must be linear (metric.Spec.Linear; loop.CheckLinear).
func CSSTObjectiveLoss(obj metric.Objective, C mat.Matrix, tail []bool, p metric.Params) (targets, adjust []float64, err error) {
	if err := loop.CheckLinear(gain.CSST, obj); err != nil {
		return nil, nil, err
	}
	ev, err := metric.Evaluate(obj, C, tail, p)
	if err != nil {
		return nil, nil, err
	}
	var L mat.Dense
	if err := metric.Linearize(&L, obj, C, tail, ev.Lambda, p); err != nil {
		return nil, nil, err
	}
	return CSSTLoss(&L)
}

// CSSTObjective reports whether CSST's loss can optimise obj (an error
// saying why not): pretrain.loss = "csst" asks it at configuration time.
func CSSTObjective(obj metric.Objective) error { return loop.CheckLinear(gain.CSST, obj) }

// LASTargets returns MiSLAS's label-aware smoothing targets (K×K
// row-major) for the labeled training counts n: class y is smoothed by
//
//	ε_y = ε_K + (ε_1 − ε_K)·sin(π/2 · (n_y − n_min)/(n_max − n_min)),
//
// head = ε_1 for the most frequent class and tail = ε_K for the rarest, and
// its row is 1 − ε_y on y and ε_y/(K−1) elsewhere. With all counts equal
// every class is the most frequent: ε_y = ε_1.
func LASTargets(n []int, head, tail float64) []float64 {
	K := len(n)
	lo, hi := n[0], n[0]
	for _, c := range n {
		lo, hi = min(lo, c), max(hi, c)
	}
	t := make([]float64, K*K)
	for y, c := range n {
		eps := head
		if hi > lo {
			eps = tail + (head-tail)*math.Sin(math.Pi/2*float64(c-lo)/float64(hi-lo))
		}
		row := t[y*K : (y+1)*K]
		for j := range row {
			row[j] = eps / float64(K-1)
		}
		row[y] = 1 - eps
	}
	return t
}

// softLoss is what a policy that does not mix trains with.
type softLoss struct {
	targets, adjust []float64
	sampling        Sampling
	freeze          bool
}

// softLossFor derives the loss of h's policy from the last refresh: nil for
// the mixup policies and none (plain CE).
func (e *Engine) softLossFor(h loop.Hyper, ev metric.Eval) (*softLoss, error) {
	switch h.Policy {
	case gain.CSST:
		if err := loop.CheckLinear(gain.CSST, h.Objective); err != nil {
			return nil, err
		}
		var L mat.Dense
		if err := metric.Linearize(&L, h.Objective, e.es.C, e.tail, ev.Lambda, h.ParamsFor(e.K, e.info.Val, e.info.Test)); err != nil {
			return nil, err
		}
		t, a, err := CSSTLoss(&L)
		if err != nil {
			return nil, err
		}
		return &softLoss{targets: t, adjust: a, sampling: SampleInstance}, nil
	case gain.MiSLAS2:
		return &softLoss{targets: LASTargets(e.info.TrainCounts, h.LASHead, h.LASTail), sampling: SampleClass, freeze: true}, nil
	}
	return nil, nil
}

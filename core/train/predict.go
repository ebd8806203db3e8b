package train

import (
	"math"
)

// interval follows one refresh interval: the change of ψ the method's own
// first-order expansion predicts for the steps taken, to be set against the
// change the next refresh measures (docs/method.md, "Is the linear step
// still valid?").
//
// A step with head learning rate η moves W by η·m, with the momentum buffer
// m = μm + g, and in expectation over the pairs drawn from P the mixup
// gradient is g = −Σ_ij P_ij V_ij, along which ψ changes by Σ_ij P_ij G_ij
// per unit step (eq. 8). Taking the buffer as empty at the refresh, the
// k-th step of the interval moves W by η_k·(1 − μ^k)/(1 − μ) such units, so
//
//	Δψ_pred = Σ_k η_k·(1 − μ^k)/(1 − μ) · Σ_ij P_ij G_ij,
//
// accumulated step by step (a control that recomputes P and G changes the
// last factor from then on). The realised change is ψ at the next refresh
// minus ψ at this one, as every refresh reports it: with its own
// multipliers. The linearisation holds them fixed, so a step that
// overshoots — the favoured class takes over, another becomes the worst —
// shows as a realised change of the wrong sign.
type interval struct {
	valid bool    // a prediction exists: mixup steps, objective unchanged
	sum   float64 // the predicted change so far
	psi   float64 // ψ at the refresh that opened the interval
}

// intervalState is an interval in a checkpoint.
type intervalState struct {
	Valid bool    `json:"valid"`
	Sum   float64 `json:"sum"`
	Psi   float64 `json:"psi"`
}

func (iv *interval) state() intervalState { return intervalState{iv.valid, iv.sum, iv.psi} }

func (iv *interval) restore(s intervalState) { *iv = interval{valid: s.Valid, sum: s.Sum, psi: s.Psi} }

// expectedGain is Σ_ij P_ij G_ij.
func expectedGain(P, G []float64) float64 {
	var s float64
	for i, p := range P {
		if p != 0 {
			s += p * G[i]
		}
	}
	return s
}

// momentumGain is (1 − μ^k)/(1 − μ): how far the k-th step of an interval
// has carried a constant gradient, momentum included (k for μ = 0… 1).
func momentumGain(mu float64, k int) float64 {
	if mu == 0 {
		return 1
	}
	return (1 - math.Pow(mu, float64(k))) / (1 - mu)
}

// predictSteps adds the predicted change of steps [from, from+len(lr)) of
// the interval, whose first step is the refresh's.
func (e *Engine) predictSteps(lr []float64, mode Mode) {
	iv := &e.iv
	if !iv.valid {
		return
	}
	if mode != ModeMixup {
		iv.valid = false // a prediction of mixup steps says nothing of others
		return
	}
	iv.sum = accumulate(iv.sum, lr, e.cfg.Momentum, e.step-e.lastRefresh, expectedGain(e.last.P, e.last.G))
}

// accumulate adds to sum the predicted change of ψ of the steps of an
// interval from its k0-th on (k0 = 0: its first), at head learning rates
// lr, momentum mu and expected gain eg per unit step: the engine's
// prediction and Preview are this one loop, so a run of steps split
// anywhere sums to the same.
func accumulate(sum float64, lr []float64, mu float64, k0 int, eg float64) float64 {
	for i, eta := range lr {
		sum += eta * momentumGain(mu, k0+i+1) * eg
	}
	return sum
}

// closeInterval ends the interval at a refresh whose ψ is psi: the
// predicted and realised changes of ψ, nil when there is no prediction (the
// first refresh, steps without mixup, a changed objective).
func (e *Engine) closeInterval(psi float64) (pred, real *float64) {
	iv := &e.iv
	if !iv.valid || e.refreshes < 2 {
		return nil, nil
	}
	p, r := iv.sum, psi-iv.psi
	return &p, &r
}

// openInterval starts an interval at the refresh just recomputed.
func (e *Engine) openInterval() {
	e.iv = interval{valid: e.hyper.Policy.Mixes(), psi: e.last.Psi}
}

package train

import (
	"fmt"

	"selmix/core/loop"
)

// Preview forecasts the interval that b's refresh opens under cur (the
// hyperparameters in force) and under next. It is Decide and the
// interval's arithmetic of the engine's own prediction (accumulate),
// first order, with the multipliers held at the refresh's: the engine
// records the same Δψ_pred for an interval whose change was made at its
// refresh. It is pure and safe to call from any goroutine.
func Preview(b *loop.Basis, cur, next loop.Hyper) (loop.Forecast, error) {
	if b == nil || b.C == nil {
		return loop.Forecast{}, fmt.Errorf("no refresh statistics to forecast from")
	}
	if err := next.Validate(); err != nil {
		return loop.Forecast{}, err
	}
	if err := next.Consistent(); err != nil {
		return loop.Forecast{}, err
	}
	now, err := outlook(b, cur)
	if err != nil {
		return loop.Forecast{}, err
	}
	nx, err := outlook(b, next)
	if err != nil {
		return loop.Forecast{}, err
	}
	return loop.Forecast{Now: now, Next: nx, Steps: intervalEnd(b, next) - b.Step}, nil
}

// intervalEnd is the step of the refresh that closes the interval under h.
func intervalEnd(b *loop.Basis, h loop.Hyper) int { return min(b.Step+h.Refresh, b.Steps) }

// outlook is the interval's prediction under h.
func outlook(b *loop.Basis, h loop.Hyper) (loop.Outlook, error) {
	o := loop.Outlook{Objective: h.Objective}
	if !h.Policy.Mixes() {
		o.Why = fmt.Sprintf("policy %s does not mix: the linear model predicts mixup steps", h.Policy)
		return o, nil
	}
	d, err := Decide(nil, b.Stats, h)
	if err != nil {
		return o, err
	}
	o.Gain = expectedGain(d.P.RawMatrix().Data, d.G.RawMatrix().Data)
	end := intervalEnd(b, h)
	lr := make([]float64, max(0, end-b.Step))
	for i := range lr {
		lr[i] = cosineLR(h.LR, b.Step+i, b.Steps)
	}
	o.Delta = accumulate(0, lr, b.Momentum, 0, o.Gain)
	o.OK = true
	return o, nil
}

// Basis is what the last refresh left for a forecast (Preview): the
// validation statistics it measured and the run's schedule; nil before
// the first. An engine resumed from a checkpoint has its checkpoint's.
// Call it when Run is not running.
func (e *Engine) Basis() *loop.Basis {
	if e.last == nil {
		return nil
	}
	return e.last.Basis
}

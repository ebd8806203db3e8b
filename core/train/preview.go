package train

import (
	"fmt"

	"selmix/core/metric"
)

// Basis is what a refresh leaves for a forecast of the interval it opens:
// the validation statistics it measured and the run's schedule. A
// Refresh carries it (the engine's own: never written again), so a viewer
// can ask what the interval would give under other hyperparameters
// without asking the engine (Preview).
type Basis struct {
	Stats
	Step     int     // the refresh's step: the interval's first
	Steps    int     // the run's fine-tuning steps: the end of the cosine schedule
	Momentum float64 // SGD momentum μ
}

// Forecast is the change of ψ the linear model predicts for the interval
// a refresh opens, under the hyperparameters in force (Now) and under
// others (Next), with the refresh's statistics: what the interval's
// prediction (predict.go) would record if the change were made at the
// refresh, before its first step.
type Forecast struct {
	Now, Next Outlook
	Steps     int // the interval's steps under Next
}

// Outlook is one setting's predicted change of ψ over an interval, in its
// objective's units. Without a prediction (a policy that does not mix),
// OK is false and Why says why.
type Outlook struct {
	Objective metric.Objective
	Delta     float64 // Δψ_pred
	Gain      float64 // Σ_ij P_ij G_ij: the change of ψ per unit step
	OK        bool
	Why       string
}

// Preview forecasts the interval that b's refresh opens under cur (the
// hyperparameters in force) and under next. It is Decide and the
// interval's arithmetic of the engine's own prediction (accumulate),
// first order, with the multipliers held at the refresh's: the engine
// records the same Δψ_pred for an interval whose change was made at its
// refresh. It is pure and safe to call from any goroutine.
func Preview(b *Basis, cur, next Hyper) (Forecast, error) {
	if b == nil || b.C == nil {
		return Forecast{}, fmt.Errorf("no refresh statistics to forecast from")
	}
	if err := next.Validate(); err != nil {
		return Forecast{}, err
	}
	if err := next.Consistent(); err != nil {
		return Forecast{}, err
	}
	now, err := b.outlook(cur)
	if err != nil {
		return Forecast{}, err
	}
	nx, err := b.outlook(next)
	if err != nil {
		return Forecast{}, err
	}
	return Forecast{Now: now, Next: nx, Steps: b.intervalEnd(next) - b.Step}, nil
}

// intervalEnd is the step of the refresh that closes the interval under h.
func (b *Basis) intervalEnd(h Hyper) int { return min(b.Step+h.Refresh, b.Steps) }

// outlook is the interval's prediction under h.
func (b *Basis) outlook(h Hyper) (Outlook, error) {
	o := Outlook{Objective: h.Objective}
	if !h.Policy.Mixes() {
		o.Why = fmt.Sprintf("policy %s does not mix: the linear model predicts mixup steps", h.Policy)
		return o, nil
	}
	d, err := Decide(nil, b.Stats, h)
	if err != nil {
		return o, err
	}
	o.Gain = expectedGain(d.P.RawMatrix().Data, d.G.RawMatrix().Data)
	end := b.intervalEnd(h)
	lr := make([]float64, max(0, end-b.Step))
	for i := range lr {
		lr[i] = cosineLR(h.LR, b.Step+i, b.Steps)
	}
	o.Delta = accumulate(0, lr, b.Momentum, 0, o.Gain)
	o.OK = true
	return o, nil
}

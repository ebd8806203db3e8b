package loop

import (
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

package loop

import (
	"math"

	"selmix/core/metric"
)

// Best is the model kept at the best validation ψ of the objective being
// optimized (Lightning's ModelCheckpoint(monitor=…)): judged at every
// refresh, and, after the objective changed, on the new objective only.
// Its test metrics are measured when it is taken, so a summary reports
// them without loading the model again, and a resumed run carries them in
// its checkpoint.
type Best struct {
	Step      int
	Objective metric.Objective
	Psi       float64       // validation ψ of Objective at Step
	Val       metric.Report // validation at Step
	Test      metric.Report // test at Step
	TestObj   []float64     // ψ of every objective on test at Step, metric.Objectives() order
	// Aimed says Psi is aimed at α/K + δ (Aimed of Objective and the
	// margin at Step), not Objective's reported ψ as TestObj is.
	Aimed bool
}

// NewBest reports whether a refresh whose optimized objective obj has
// validation ψ psi replaces the best so far (bestObj's best, nil
// bestObj: none yet). It is the one definition the engine, which keeps
// the model, and the run store, which records best and best_step, share.
// A ψ that is not a number is never a best; any other ψ of a different
// objective is: a changed objective starts a new best.
func NewBest(bestObj *metric.Objective, best float64, obj metric.Objective, psi float64) bool {
	if math.IsNaN(psi) {
		return false
	}
	return bestObj == nil || *bestObj != obj || psi > best
}

// Clone is a deep copy of b (nil for nil).
func (b *Best) Clone() *Best {
	if b == nil {
		return nil
	}
	c := *b // the reports' slices are never written again
	c.TestObj = append([]float64(nil), b.TestObj...)
	return &c
}

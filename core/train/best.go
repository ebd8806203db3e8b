package train

import (
	"fmt"
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

// KeepBest asks for the engine's complete state (as a Checkpointer gets
// it, less the controls scheduled ahead) each time a refresh takes a new
// best, after that refresh; a run forked from it continues from the best
// model. Call before Run.
func (e *Engine) KeepBest(f func(step int, state []byte) error) { e.keep = f }

// JudgeBest turns the judging of a best model on (the default) or off:
// off, no refresh measures test for a new best, nothing is kept and the
// summary has no best. Nothing else a run computes changes. Call before
// Run.
func (e *Engine) JudgeBest(on bool) { e.noBest = !on }

// Best is a copy of the best so far (nil before the first refresh). Only
// call it when Run is not running.
func (e *Engine) Best() *Best { return e.best.clone() }

func (b *Best) clone() *Best {
	if b == nil {
		return nil
	}
	c := *b // the reports' slices are never written again
	c.TestObj = append([]float64(nil), b.TestObj...)
	return &c
}

// judgeBest takes a new best if the refresh that measured psi of obj on
// val (aimed at α/K + δ where aimed, Aimed) makes one: it measures the
// test split and hands the keeper a checkpoint. Evaluating leaves every
// state alone, so a run that keeps its best computes what one that does
// not computes.
func (e *Engine) judgeBest(obj metric.Objective, psi float64, aimed bool, val metric.Report) error {
	if e.noBest {
		return nil
	}
	var have *metric.Objective
	best := math.Inf(-1)
	if e.best != nil {
		have, best = &e.best.Objective, e.best.Psi
	}
	if !NewBest(have, best, obj, psi) {
		return nil
	}
	test, testObj, err := e.testReport()
	if err != nil {
		return fmt.Errorf("evaluating the best model (step %d) on test: %w", e.step, err)
	}
	e.best = &Best{Step: e.step, Objective: obj, Psi: psi, Aimed: aimed, Val: val, Test: test, TestObj: testObj}
	if e.keep == nil {
		return nil
	}
	// The model and the run's state at this step, without the controls
	// scheduled ahead (a replay's): those are the run's future, not the
	// model's, and a replay keeps the bytes its original kept.
	b, err := e.marshalState(nil)
	if err != nil {
		return fmt.Errorf("best checkpoint at step %d: %w", e.step, err)
	}
	if err := e.keep(e.step, b); err != nil {
		return fmt.Errorf("best checkpoint at step %d: %w", e.step, err)
	}
	return nil
}

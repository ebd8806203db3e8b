package train

import (
	"fmt"
	"math"

	"selmix/core/loop"
	"selmix/core/metric"
)

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

// Top is the best validation ψ so far of the optimized objective and the
// step of the refresh that measured it, as the refreshes' Best flags judge
// it (also where the best model is not judged); ok is false before the
// first refresh. A run started from a checkpoint carries its run's.
func (e *Engine) Top() (obj metric.Objective, psi float64, step int, ok bool) {
	if e.top == nil {
		return "", 0, 0, false
	}
	return e.top.Objective, e.top.Psi, e.top.Step, true
}

// Best is a copy of the best so far (nil before the first refresh). Only
// call it when Run is not running.
func (e *Engine) Best() *loop.Best { return e.best.Clone() }

// topState is the best ψ so far of the optimized objective and the step
// of the refresh that measured it: what a refresh's Best flag is judged
// against. The engine keeps it whether or not it judges (and keeps) the
// best model, and a checkpoint carries it.
type topState struct {
	Objective metric.Objective `json:"objective"`
	Psi       float64          `json:"psi"`
	Step      int              `json:"step"`
}

// newTop reports whether the refresh at this step, whose optimized
// objective obj has ψ psi, takes a new best (loop.NewBest), and takes it.
func (e *Engine) newTop(obj metric.Objective, psi float64) bool {
	var have *metric.Objective
	best := math.Inf(-1)
	if e.top != nil {
		have, best = &e.top.Objective, e.top.Psi
	}
	if !loop.NewBest(have, best, obj, psi) {
		return false
	}
	e.top = &topState{Objective: obj, Psi: psi, Step: e.step}
	return true
}

// judgeBest takes the refresh that measured psi of obj on val (aimed at
// α/K + δ where aimed, Aimed), a new best (newTop), as the best model: it
// measures the test split and hands the keeper a checkpoint. Evaluating leaves every
// state alone, so a run that keeps its best computes what one that does
// not computes.
func (e *Engine) judgeBest(obj metric.Objective, psi float64, aimed bool, val metric.Report) error {
	if e.noBest {
		return nil
	}
	test, testObj, err := e.testReport()
	if err != nil {
		return fmt.Errorf("evaluating the best model (step %d) on test: %w", e.step, err)
	}
	e.best = &loop.Best{Step: e.step, Objective: obj, Psi: psi, Aimed: aimed, Val: val, Test: test, TestObj: testObj}
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

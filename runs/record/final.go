package record

import (
	"encoding/json"
	"math"

	"selmix/core/metric"
	"selmix/runs"
)

// Final is ψ of r's optimized objective on the test set after
// fine-tuning (or where it stopped), from summary.json; NaN for a run
// with no summary, one that does not parse or does not say.
func Final(r *runs.Run) float64 {
	s, err := LoadSummary(r)
	if err != nil {
		return math.NaN()
	}
	obj := s.Objective
	if obj == "" {
		obj = metric.Objective(r.Meta.Objective)
	}
	return obj.In(s.TestObjAfter)
}

// BestAimed reports whether r's best validation ψ (run.json's best, at
// best_step) was aimed at α/K + δ (loop.Aimed), not its objective's
// reported ψ: as the hyperparameters of the refresh logged at best_step
// say. Only a run whose best was judged on an objective with a coverage
// constraint has its event log read; a log that cannot be read says no.
func BestAimed(r *runs.Run) bool {
	m := r.Meta
	obj := m.BestObjective
	if obj == "" {
		obj = m.Objective
	}
	spec, ok := metric.Objective(obj).Spec()
	if r.Broken() || m.BestStep < 0 || m.Format < 2 || !ok || spec.Constraint == metric.NoConstraint {
		// Format 1 predates the coverage margin.
		return false
	}
	evs, _, err := r.Events()
	if err != nil {
		return false
	}
	for i := len(evs) - 1; i >= 0; i-- {
		ev := evs[i]
		if ev.Kind != KindRefresh || ev.Step != m.BestStep {
			continue
		}
		var d struct {
			Hyper HyperData `json:"hyper"`
		}
		if json.Unmarshal(ev.Data, &d) != nil {
			return false
		}
		return d.Hyper.Aimed()
	}
	return false
}

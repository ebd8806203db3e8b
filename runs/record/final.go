package record

import (
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

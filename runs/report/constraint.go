package report

import (
	"fmt"

	"selmix/core/loop"
	"selmix/core/metric"
)

// bound is s's coverage bound α/K for K classes (α unknown: the default).
func bound(alpha float64, K int) float64 {
	return metric.Params{Alpha: alpha}.Bound(max(K, 1))
}

// met is "k/K": the classes of r at coverage ≥ α/K.
func met(r metric.Report, alpha float64) string {
	return fmt.Sprintf("%d/%d", r.CoverageMet(bound(alpha, r.K)), r.K)
}

// constraintText says how the coverage constraint of spec stands at r:
// "9 of 10 met, min coverage 0.0925".
func constraintText(c metric.Constraint, r metric.Report, alpha float64) (text string, ok bool) {
	b := bound(alpha, r.K)
	// Printed beside the bound, a coverage that misses it never reads as
	// it (metric.CoverageText).
	if c == metric.GroupCoverage {
		n := r.HTCoverageMet(b)
		return fmt.Sprintf("%d of 2 met, min head/tail coverage %s", n, metric.CoverageText(r.MinHTCoverage, b, 4)), n == 2
	}
	n := r.CoverageMet(b)
	return fmt.Sprintf("%d of %d met, min coverage %s", n, r.K, metric.CoverageText(r.MinCoverage, b, 4)), n == r.K
}

// Constraint writes, for a run whose optimized objective has a coverage
// constraint, how it stands on validation and on test at the end and at
// the best step, against the bound α/K; a constraint unmet on validation
// at the end says so first. Nothing for other objectives.
func Constraint(w interface{ Write([]byte) (int, error) }, s *loop.Summary) {
	spec, ok := s.Objective.Spec()
	if !ok || spec.Constraint == metric.NoConstraint {
		return
	}
	what := "every class"
	if spec.Constraint == metric.GroupCoverage {
		what = "head and tail"
	}
	val, vok := constraintText(spec.Constraint, s.ValAfter, s.Alpha)
	test, _ := constraintText(spec.Constraint, s.TestAfter, s.Alpha)
	verdict := "met on validation at the end"
	if !vok {
		verdict = "UNMET on validation at the end"
	}
	fmt.Fprintf(w, "constraint: coverage ≥ α/K = %s (%s) %s: validation %s; test %s\n",
		metric.BoundText(bound(s.Alpha, s.ValAfter.K)), what, verdict, val, test)
	if b := s.Best; b != nil {
		bv, _ := constraintText(spec.Constraint, b.Val, s.Alpha)
		bt, _ := constraintText(spec.Constraint, b.Test, s.Alpha)
		fmt.Fprintf(w, "  at best (step %d): validation %s; test %s\n", b.Step, bv, bt)
	}
}

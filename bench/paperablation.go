package bench

import (
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat"

	"selmix/core/metric"
	"selmix/runs/sweep"
)

// resampleTable writes what the mixup adds: per objective, SelMix's runs
// against policy resample's (the same P and pair draws, trained unmixed),
// their difference seed by seed, at the last step and at the best step.
func resampleTable(p func(string, ...any), rs []paperResult) {
	objs, _ := splitLabels(rs, "resample")
	if len(objs) == 0 {
		return
	}
	p("\n## What does the mixup add? SelMix against resample\n\n")
	p("Policy `resample` draws SelMix's pairs from SelMix's P and trains on both samples unmixed, each with its own label (docs/method.md, \"What does the mixup add?\"; Teney et al., ICML 2024). ")
	p("Each cell: the optimized objective on test; Δ = selmix − resample, seed by seed (mean ± sample std), and on how many seeds selmix is ahead.\n\n")
	p("| objective | selmix | resample | Δ | selmix ahead | selmix at best | resample at best | Δ at best | ahead at best |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, o := range objs {
		p("| %s |", o)
		for _, v := range []value{optimized, optimizedBest} {
			sel, res := bySeed(rs, "objectives", o, v), bySeed(rs, "resample", o+"/resample", v)
			var a, b, d []float64
			ahead := 0
			for seed, x := range sortedMap(sel) {
				y, ok := res[seed]
				if !ok || math.IsNaN(x) || math.IsNaN(y) {
					continue
				}
				a, b, d = append(a, x), append(b, y), append(d, x-y)
				if x > y {
					ahead++
				}
			}
			p(" %s | %s | %s | %d of %d |", sweep.MeanStd(a), sweep.MeanStd(b), signedMeanStd(d), ahead, len(d))
		}
		p("\n")
	}
}

// signedMeanStd is sweep.MeanStd with the sign of the mean always shown.
func signedMeanStd(xs []float64) string {
	s := sweep.MeanStd(xs)
	if len(xs) > 0 && stat.Mean(xs, nil) >= 0 {
		return "+" + s
	}
	return s
}

// bySeed is v of a row's runs by seed.
func bySeed(rs []paperResult, table, label string, v value) map[string]float64 {
	m := map[string]float64{}
	for _, r := range rs {
		if r.table == table && r.label == label {
			m[r.seed] = v(r)
		}
	}
	return m
}

// constraintTables are the tables whose rows fine-tune from the LA-CE
// model, where a coverage row's constraint is read.
var constraintTables = []string{"objectives", "policies", "resample", "margin", "form", "adapt"}

// constraintTable writes, for every row whose objective has a coverage
// constraint, on how many seeds the constraint held on test against α/K
// at the last step and at the best step, beside the objective's test ψ at
// both.
func constraintTable(p func(string, ...any), rs []paperResult) {
	type row struct{ table, label string }
	var rows []row
	seen := map[row]bool{}
	for _, t := range constraintTables {
		for _, r := range rs {
			k := row{t, r.label}
			if r.table != t || seen[k] {
				continue
			}
			if spec, ok := r.sum.Objective.Spec(); ok && spec.Constraint != metric.NoConstraint {
				seen[k] = true
				rows = append(rows, k)
			}
		}
	}
	if len(rows) == 0 {
		return
	}
	p("\n## Coverage constraints on test\n\n")
	p("Every row whose objective constrains coverage: on how many seeds the constraint (every class, or head and tail, at coverage ≥ α/K on the test set) holds at the last step and at the best step, and the objective's test ψ at both. The rows aim at α/K exactly (`finetune.cov_margin = 0`, the paper) unless they say otherwise.\n\n")
	p("| row | held at end | ψ end | held at best | ψ at best |\n|---|---|---|---|---|\n")
	for _, k := range rows {
		var end, best int
		var n, nb int
		for _, r := range rs {
			if r.table != k.table || r.label != k.label {
				continue
			}
			n++
			if constraintHeld(r.sum.Objective, r.sum.TestAfter, r.sum.Alpha) {
				end++
			}
			if b := r.sum.Best; b != nil {
				nb++
				if constraintHeld(r.sum.Objective, b.Test, r.sum.Alpha) {
					best++
				}
			}
		}
		p("| %s | %d of %d | %s | %d of %d | %s |\n", k.label, end, n, sweep.MeanStd(collect(rs, k.table, k.label, optimized)),
			best, nb, sweep.MeanStd(sweep.Known(collect(rs, k.table, k.label, optimizedBest))))
	}
}

// constraintHeld reports whether o's coverage constraint holds at r
// against α/K (α 0: the default), as the run's summary counts it.
func constraintHeld(o metric.Objective, r metric.Report, alpha float64) bool {
	spec, ok := o.Spec()
	if !ok || r.K == 0 {
		return false
	}
	b := metric.Params{Alpha: alpha}.Bound(r.K)
	if spec.Constraint == metric.GroupCoverage {
		return r.HTCoverageMet(b) == 2
	}
	return r.CoverageMet(b) == r.K
}

// relativeSets is a run's --set list with every quoted absolute path
// written relative: to base (the folder the members ran in, where relative
// paths resolve: the repository for `make repro`) when it lies under it,
// else to the runs root root, as "<runs root>/…". The report then names no
// machine's folders.
func relativeSets(sets []string, base, root string) []string {
	out := make([]string, len(sets))
	for i, kv := range sets {
		out[i] = kv
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		path, err := strconv.Unquote(v)
		if err != nil || !filepath.IsAbs(path) {
			continue
		}
		if rel, ok := under(base, path); ok {
			out[i] = k + "=" + strconv.Quote(rel)
		} else if rel, ok := under(root, path); ok {
			out[i] = k + "=" + strconv.Quote("<runs root>/"+rel)
		}
	}
	return out
}

// under is path relative to dir, with slashes, if it lies inside dir.
func under(dir, path string) (string, bool) {
	if dir == "" {
		return "", false
	}
	rel, err := filepath.Rel(dir, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

package report

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"

	"selmix/core/metric"
	"selmix/runs/export"
	"selmix/runs/record"
)

// value is one number of a run of a comparison: a reported metric when
// rep is not nil, else ψ of objective obj (an index of
// metric.Objectives()); NaN where the run has none.
type value func(i int, rep func(metric.Report) float64, obj int) float64

// Compare writes rs side by side as runs compare prints them, one column
// per run under its id and one value per cell: the config keys that
// differ, every reported metric (metric.Scalars, by its Key as the
// exports and the comparison view name it: min_recall is the true worst
// recall, ψ min-recall its smoothed stand-in) and ψ at the last refresh
// and at its best over the refreshes (validation), and on the test set
// before and after fine-tuning and at the best step (the model the run
// keeps).
func Compare(w io.Writer, rs []export.Recorded) error {
	var g grid
	perRun := func(label string, f func(i int) string) {
		cells := []string{label}
		for i := range rs {
			cells = append(cells, f(i))
		}
		g.row(cells...)
	}
	perRun("run", func(i int) string { return cell(rs[i].Meta.ID) })
	perRun("name", func(i int) string { return cell(rs[i].Meta.Name) })
	perRun("objective", func(i int) string { return cell(rs[i].Meta.Objective) })
	if slices.ContainsFunc(rs, func(r export.Recorded) bool { return r.Meta.Method != "" }) {
		perRun("method", func(i int) string { return cell(cmp.Or(rs[i].Meta.Method, "paper")) })
	}
	g.row("")
	g.row("config (keys that differ)")
	configRows(&g, rs, perRun)
	// each prints every reported metric and ψ of every objective.
	each := func(heading string, v value) {
		g.row("")
		g.row(heading)
		for _, m := range metric.Scalars() {
			get := func(r metric.Report) float64 { return m.Get(&r) }
			perRun(m.Key, func(i int) string { return num4(v(i, get, -1)) })
		}
		// The classes at coverage ≥ α/K, of K: the @cov constraints met.
		perRun(metRow, func(i int) string {
			alpha, K := alphaOf(rs[i]), 0
			n := v(i, func(r metric.Report) float64 { K = r.K; return float64(r.CoverageMet(bound(alpha, r.K))) }, -1)
			if math.IsNaN(n) || K == 0 {
				return "-"
			}
			return fmt.Sprintf("%d/%d", int(n), K)
		})
		for k, o := range metric.Objectives() {
			perRun(record.ObjectiveSeries(o).Label, func(i int) string { return num4(v(i, nil, k)) })
		}
	}
	each("validation, last refresh", valStat(rs, func(v []float64) float64 { return v[len(v)-1] }))
	each("validation, best over refreshes", valStat(rs, func(v []float64) float64 { return slices.Max(v) }))
	each("test, before fine-tuning", testValue(rs, false))
	each("test, after fine-tuning (the last step)", testValue(rs, true))
	g.row("")
	perRun("best step", func(i int) string {
		if f := rs[i].Hist.Final; f != nil && f.Best != nil {
			return strconv.Itoa(f.Best.Step)
		}
		return "-"
	})
	each("test, at the best step (the model the run keeps)", testBest(rs))
	g.row("")
	g.row("- : not recorded (a run that has not finished has no test values; one that kept no model, none at best)")
	return g.write(w)
}

// configRows adds a row per config key whose value differs between rs
// (but name, which has its own row), "(none)" if none does.
func configRows(g *grid, rs []export.Recorded, perRun func(label string, f func(i int) string)) {
	ndiff := 0
	keys := map[string]bool{}
	for _, r := range rs {
		for k := range r.Config {
			keys[k] = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if k == "name" {
			continue // the name row above
		}
		same := true
		for _, r := range rs[1:] {
			same = same && r.Config.Text(k) == rs[0].Config.Text(k)
		}
		if same {
			continue
		}
		ndiff++
		perRun(cell(k), func(i int) string {
			if _, ok := rs[i].Config[k]; ok {
				return cell(rs[i].Config.Text(k))
			}
			return "(unset)"
		})
	}
	if ndiff == 0 {
		g.row("(none)")
	}
}

// valStat is a statistic, pick, of one metric over a run's refreshes.
func valStat(rs []export.Recorded, pick func(vals []float64) float64) value {
	return func(i int, rep func(metric.Report) float64, obj int) float64 {
		vals := make([]float64, 0, len(rs[i].Hist.Refreshes))
		var psi record.Series
		if rep == nil {
			psi = record.ObjectiveSeries(metric.Objectives()[obj])
		}
		for j := range rs[i].Hist.Refreshes {
			r := &rs[i].Hist.Refreshes[j]
			if rep != nil {
				vals = append(vals, rep(r.Stats.Report))
			} else if v, ok := psi.Get(r); ok {
				vals = append(vals, v)
			}
		}
		if len(vals) == 0 {
			return math.NaN()
		}
		return pick(vals)
	}
}

// alphaOf is the α of a run's coverage bound: at its end, else at its
// last refresh; 0 (the default) if neither says.
func alphaOf(r export.Recorded) float64 {
	if f := r.Hist.Final; f != nil && f.Alpha > 0 {
		return f.Alpha
	}
	if n := len(r.Hist.Refreshes); n > 0 {
		return r.Hist.Refreshes[n-1].Hyper.Alpha
	}
	return 0
}

// testBest is a metric on test at the best step: the model the run keeps.
func testBest(rs []export.Recorded) value {
	return func(i int, rep func(metric.Report) float64, obj int) float64 {
		f := rs[i].Hist.Final
		if f == nil || f.Best == nil {
			return math.NaN()
		}
		switch {
		case rep != nil:
			return rep(f.Best.Test)
		case obj < len(f.Best.TestObj):
			return f.Best.TestObj[obj]
		}
		return math.NaN()
	}
}

// testValue is a metric on test before (or after) fine-tuning.
func testValue(rs []export.Recorded, after bool) value {
	return func(i int, rep func(metric.Report) float64, obj int) float64 {
		f := rs[i].Hist.Final
		if f == nil {
			return math.NaN()
		}
		r, objs := f.TestBefore, f.TestObjBefore
		if after {
			r, objs = f.TestAfter, f.TestObjAfter
		}
		switch {
		case rep != nil:
			return rep(r)
		case obj < len(objs):
			return objs[obj]
		}
		return math.NaN()
	}
}

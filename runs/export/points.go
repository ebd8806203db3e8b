// Package export is what every export of recorded runs writes: one
// vocabulary of series (Points) that the TensorBoard event files
// (runs/export/tensorboard), the tables for notebooks (runs/export/table)
// and runs compare share, so a number has the same name everywhere
// (docs/run-format.md, "Exports").
package export

import (
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"
	"unicode"

	"selmix/core/metric"
	"selmix/runs/record"
)

// Splits of a Point.
const (
	Val  = "val"  // every refresh's evaluation on the validation set
	Test = "test" // the test set: before fine-tuning (step 0) and after it (the last step)
	// TestBest is the test set at the best step: the model a run keeps
	// (its best validation ψ of the optimized objective; docs/method.md).
	TestBest = "test_best"
)

// Metric names (docs/run-format.md, "Exports"): a Point's Metric is the
// Key of a series of the run format's catalogue (record.AllSeries,
// record.Vectors): one of these, an objective's ψ
// (record.ObjectiveSeries) or a reported metric (record.ReportSeries).
const (
	Psi       = record.KeyPsi       // ψ of the optimized objective, with its multipliers
	S         = record.KeyS         // the inverse temperature P was computed with
	Loss      = record.KeyLoss      // the last training loss (absent before the first step)
	Predicted = record.KeyPredicted // Δψ over the interval the refresh closes, as G·P predicted it
	Realised  = record.KeyRealised  // and as it happened
	Lambda    = record.KeyLambda    // per-class Lagrange multipliers (Class set)
	LambdaH   = record.KeyLambdaHead
	LambdaT   = record.KeyLambdaTail
	Recall    = record.KeyRecall   // per class
	Coverage  = record.KeyCoverage // per class
)

// Point is one number of a run.
type Point struct {
	Split  string    // Val or Test
	Step   int       // the fine-tuning step
	Time   time.Time // when it was recorded; zero if unknown
	Metric string
	Class  int // the class of a per-class metric; -1 for the others
	Value  float64
}

// ScalarMetrics are the names of the scalar (not per-class) series of a
// refresh, in the order Refresh yields them (loss, Δψ and the head and
// tail multipliers only where recorded): record.AllSeries's keys.
func ScalarMetrics() []string {
	var out []string
	for _, s := range record.AllSeries() {
		out = append(out, s.Key)
	}
	return out
}

// Points yields every number of a history: each refresh's (Refresh), then
// the test set's before and after fine-tuning if the run finished (Final),
// then the test set at the best step (AtBest).
func Points(h *record.History) iter.Seq[Point] {
	return func(yield func(Point) bool) {
		for i := range h.Refreshes {
			for p := range Refresh(&h.Refreshes[i]) {
				if !yield(p) {
					return
				}
			}
		}
		for p := range Final(h) {
			if !yield(p) {
				return
			}
		}
		for p := range AtBest(h) {
			if !yield(p) {
				return
			}
		}
	}
}

// AtBest yields the test set's numbers of the model a finished run keeps,
// split TestBest at the best step, as Final yields them: every objective's
// ψ, every reported metric, the per-class recall and coverage. Nothing for
// a run that has not finished or kept none (record.best off, or written
// before selmix kept one).
func AtBest(h *record.History) iter.Seq[Point] {
	return func(yield func(Point) bool) {
		if h.Final == nil || h.Final.Best == nil {
			return
		}
		b := h.Final.Best
		var t time.Time
		for i := range h.Refreshes {
			if h.Refreshes[i].Step == b.Step {
				t = h.Refreshes[i].Time
				break
			}
		}
		at := func(name string, class int, v float64) bool {
			return yield(Point{Split: TestBest, Step: b.Step, Time: t, Metric: name, Class: class, Value: v})
		}
		_ = objectives(b.TestObj, at) && reported(&b.Test, at) && perClass(&b.Test, at)
	}
}

// Refresh yields the numbers of one refresh (split Val): every series of
// record.AllSeries it records (ψ, every objective's ψ, every reported
// metric, s, the loss and the predicted and realised Δψ where recorded,
// the head and tail multipliers), then every per-class one of
// record.Vectors (the recall, coverage and per-class multipliers).
func Refresh(rf *record.RefreshEvent) iter.Seq[Point] {
	return func(yield func(Point) bool) {
		at := func(name string, class int, v float64) bool {
			return yield(Point{Split: Val, Step: rf.Step, Time: rf.Time, Metric: name, Class: class, Value: v})
		}
		for _, s := range record.AllSeries() {
			if v, ok := s.Get(rf); ok && !at(s.Key, -1, v) {
				return
			}
		}
		for _, vec := range record.Vectors() {
			for c, v := range vec.Get(rf) {
				if !at(vec.Key, c, v) {
					return
				}
			}
		}
	}
}

// Final yields the test set's numbers of a finished run: every reported
// metric, every objective's ψ and the per-class recall and coverage,
// before fine-tuning at step 0 and after it at the last step.
func Final(h *record.History) iter.Seq[Point] {
	return func(yield func(Point) bool) {
		f := h.Final
		if f == nil {
			return
		}
		var start time.Time
		if len(h.Refreshes) > 0 {
			start = h.Refreshes[0].Time
		}
		for _, side := range []struct {
			step int
			t    time.Time
			rep  *metric.Report
			objs []float64
		}{{0, start, &f.TestBefore, f.TestObjBefore}, {f.Steps, h.FinalTime, &f.TestAfter, f.TestObjAfter}} {
			at := func(name string, class int, v float64) bool {
				return yield(Point{Split: Test, Step: side.step, Time: side.t, Metric: name, Class: class, Value: v})
			}
			if !objectives(side.objs, at) || !reported(side.rep, at) || !perClass(side.rep, at) {
				return
			}
		}
	}
}

type emit = func(name string, class int, v float64) bool

func objectives(vals []float64, at emit) bool {
	for i, o := range metric.Objectives() {
		if i < len(vals) && !at(record.ObjectiveSeries(o).Key, -1, vals[i]) {
			return false
		}
	}
	return true
}

func reported(r *metric.Report, at emit) bool {
	for _, m := range metric.Scalars() {
		if !at(record.ReportSeries(m).Key, -1, m.Get(r)) {
			return false
		}
	}
	return true
}

func perClass(r *metric.Report, at emit) bool {
	for c, v := range r.Recall {
		if !at(Recall, c, v) {
			return false
		}
	}
	for c, v := range r.Coverage {
		if !at(Coverage, c, v) {
			return false
		}
	}
	return true
}

// Classes are the class names of a run, from its first start event; nil
// if it has none (then classes are known by their index).
func Classes(h *record.History) []string {
	if len(h.Starts) == 0 {
		return nil
	}
	return h.Starts[0].ClassNames
}

// ClassTag names class c in a TensorBoard tag: its index, zero-padded to
// the width of K−1 so tags sort in class order, then "_" and its name
// with anything but letters, digits, '-' and '.' replaced by '_' if the
// run names its classes. The index keeps tags apart when names clash.
func ClassTag(c, K int, names []string) string {
	w := len(strconv.Itoa(max(K-1, 0)))
	s := fmt.Sprintf("%0*d", w, c)
	if c < len(names) && names[c] != "" {
		s += "_" + strings.Map(func(r rune) rune {
			if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '.' {
				return r
			}
			return '_'
		}, names[c])
	}
	return s
}

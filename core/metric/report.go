package metric

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"gonum.org/v1/gonum/mat"
)

// Report holds every reported metric of one confusion matrix (docs/method.md, Objectives).
// Values are exact: a class with zero recall gives HMean = GMean = 0 (the
// objectives ψ clamp recalls instead, see Psi).
type Report struct {
	K int

	// Prior, Recall and Coverage are per class.
	Prior, Recall, Coverage []float64

	MeanRecall, MinRecall, HMean, GMean, MinCoverage, Accuracy float64

	// HeadRecall and TailRecall are mean recalls over the head and tail
	// classes; MinHTRecall is the smaller of the two. Likewise for coverage.
	HeadRecall, TailRecall, MinHTRecall       float64
	HeadCoverage, TailCoverage, MinHTCoverage float64

	// Worst is the class of lowest recall (lowest index on ties).
	Worst int
}

// CoverageMet is how many classes have a coverage of at least bound (to
// 10⁻⁹: coverages are counts over N), the class constraints of the @cov
// objectives met at r when bound is α/K.
func (r Report) CoverageMet(bound float64) int {
	n := 0
	for _, c := range r.Coverage {
		if Meets(c, bound) {
			n++
		}
	}
	return n
}

// HTCoverageMet is how many of the head and the tail have a mean coverage
// of at least bound: the constraints of the @ht-cov objectives (of 2).
func (r Report) HTCoverageMet(bound float64) int {
	n := 0
	for _, c := range []float64{r.HeadCoverage, r.TailCoverage} {
		if Meets(c, bound) {
			n++
		}
	}
	return n
}

// Meets reports whether coverage c is at least bound, to 10⁻⁹ (coverages
// are counts over N): a coverage constraint that holds.
func Meets(c, bound float64) bool { return c >= bound-1e-9 }

// CoverageText is coverage c with dec decimals, for a reader who compares
// it with bound: where the text, read as a number, would fall on the other
// side of the bound than c (0.0946 below 0.095 written 0.095; 0.00095
// that meets it written 0.0009), it has as many more decimals as put it on
// c's side, up to 12. NaN and the infinities are as fmt writes them.
func CoverageText(c, bound float64, dec int) string {
	s := strconv.FormatFloat(c, 'f', dec, 64)
	if math.IsNaN(c) || math.IsInf(c, 0) || math.IsNaN(bound) || math.IsInf(bound, 0) {
		return s
	}
	met := Meets(c, bound)
	for d := dec; d <= 12; d++ {
		s = strconv.FormatFloat(c, 'f', d, 64)
		if v, _ := strconv.ParseFloat(s, 64); Meets(v, bound) == met {
			break
		}
	}
	return s
}

// BoundText is the coverage bound b as the text tables print it: with 4
// decimals where they are exact to b (0.0950), else 4 significant digits
// (0.00095 at K = 1000, where 4 decimals would print 0.0009).
func BoundText(b float64) string {
	s := strconv.FormatFloat(b, 'f', 4, 64)
	if v, _ := strconv.ParseFloat(s, 64); v == b {
		return s
	}
	return strconv.FormatFloat(b, 'g', 4, 64)
}

// NewReport validates C with Check and computes its Report. tail marks the
// tail classes (see TailSplit); nil means TailSplit of the prior. NewReport
// panics if tail is not nil and its length differs from the size of C, and
// returns an error if tail leaves the head or the tail empty.
func NewReport(C mat.Matrix, tail []bool) (Report, error) {
	st, err := load(C, nil)
	if err != nil {
		return Report{}, err
	}
	return st.report(tail)
}

func (st *state) report(tail []bool) (Report, error) {
	tail, err := resolveTail(tail, st.prior)
	if err != nil {
		return Report{}, err
	}
	K := st.k
	r := Report{
		K:        K,
		Prior:    append([]float64(nil), st.prior...),
		Recall:   append([]float64(nil), st.rec...),
		Coverage: append([]float64(nil), st.cov...),
	}
	var sum, inv, logs float64
	r.MinRecall = math.Inf(1)
	r.MinCoverage = math.Inf(1)
	for i, rec := range st.rec {
		sum += rec
		inv += 1 / rec // +Inf at zero recall, giving HMean 0, not NaN
		logs += math.Log(rec)
		if rec < r.MinRecall {
			r.MinRecall, r.Worst = rec, i
		}
		r.MinCoverage = min(r.MinCoverage, st.cov[i])
		r.Accuracy += st.c[i*K+i]
	}
	r.MeanRecall = sum / float64(K)
	r.HMean = float64(K) / inv
	r.GMean = math.Exp(logs / float64(K))
	r.HeadRecall, r.TailRecall = groupMeans(st.rec, tail)
	r.MinHTRecall = min(r.HeadRecall, r.TailRecall)
	r.HeadCoverage, r.TailCoverage = groupMeans(st.cov, tail)
	r.MinHTCoverage = min(r.HeadCoverage, r.TailCoverage)
	return r, nil
}

// resolveTail returns tail, or the split by prior if tail is nil. A tail of
// the wrong length is a programming error and panics; an empty head or tail
// group is an error.
func resolveTail(tail []bool, prior []float64) ([]bool, error) {
	if tail == nil {
		return TailSplit(prior), nil
	}
	if len(tail) != len(prior) {
		panic(fmt.Sprintf("metric: tail has length %d, want %d", len(tail), len(prior)))
	}
	nh, nt := groupSizes(tail)
	if nh == 0 || nt == 0 {
		return nil, errors.New("metric: head/tail split must leave at least one class in each group")
	}
	return tail, nil
}

func groupSizes(tail []bool) (head, tl int) {
	for _, t := range tail {
		if t {
			tl++
		}
	}
	return len(tail) - tl, tl
}

// groupMeans returns the means of v over the head and over the tail classes.
// It panics if a group is empty: callers have resolved the split first.
func groupMeans(v []float64, tail []bool) (head, tl float64) {
	if len(tail) != len(v) {
		panic(fmt.Sprintf("metric: tail has length %d, want %d", len(tail), len(v)))
	}
	nh, nt := groupSizes(tail)
	if nh == 0 || nt == 0 {
		panic("metric: head/tail split leaves a group empty")
	}
	for i, x := range v {
		if tail[i] {
			tl += x
		} else {
			head += x
		}
	}
	return head / float64(nh), tl / float64(nt)
}

// Package metric computes classification metrics from a validation confusion
// matrix, the SelMix objectives ψ(C) with their Lagrange multipliers, and the
// derivative D = ∂ψ/∂C̃ that the gain matrix needs (docs/method.md).
//
// C is the joint confusion matrix, C_ij = #{y=i, pred=j}/N, which sums to 1.
// The class prior is π_i = Σ_j C_ij, recall rec_i = C_ii/π_i and coverage
// cov_j = Σ_i C_ij.
package metric

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/mat"

	"selmix/internal/suggest"
)

// Objective names a non-decomposable objective ψ (docs/method.md).
type Objective string

// The objectives every part of selmix names in code; the table (specs)
// is where an objective is defined, and the only place a new one goes.
const (
	MeanRecall      Objective = "mean-recall"
	MinRecall       Objective = "min-recall"
	GMean           Objective = "gmean"
	HMean           Objective = "hmean"
	MinHTRecall     Objective = "min-ht-recall"
	MeanRecallCov   Objective = "mean-recall@cov"
	HMeanCov        Objective = "hmean@cov"
	MeanRecallHTCov Objective = "mean-recall@ht-cov"
	HMeanHTCov      Objective = "hmean@ht-cov"
)

// Aggregate is how an objective combines the per-class recalls.
type Aggregate int

const (
	AggMean      Aggregate = iota // (1/K) Σ rec_k
	AggSoftMin                    // Σ λ_k rec_k, λ = softmax(−ω·rec): K multipliers
	AggGMean                      // (Π rec_k)^(1/K)
	AggHMean                      // K / Σ 1/rec_k
	AggSoftMinHT                  // λ_H·mean_H rec + λ_T·mean_T rec, (λ_H, λ_T) = softmax(−ω·(rec_H, rec_T)): 2 multipliers
)

// Constraint is the coverage constraint an objective adds, by Lagrange
// multipliers: [base + Σ_g λ_g (cov_g − α/K)] / (max_g λ_g + 1).
type Constraint int

const (
	NoConstraint  Constraint = iota
	ClassCoverage            // cov_j ≥ α/K for every class: K multipliers
	GroupCoverage            // the mean coverage of the head and of the tail ≥ α/K: 2 multipliers
)

// Spec is everything selmix knows of one objective.
type Spec struct {
	Name       Objective
	Title      string // for people: figure titles, pickers, reports
	Aggregate  Aggregate
	Constraint Constraint
	// Paper marks the objectives of the paper's table of results, which
	// the reproduction suite runs.
	Paper bool
}

// Linear says whether the objective's aggregate is linear in the recalls
// once the multipliers are fixed: its linearisation (Linearize) is the
// objective itself up to a constant, so the CSST loss optimises it
// (docs/method.md, "Baselines"). G-mean and H-mean are not.
func (s Spec) Linear() bool { return s.Aggregate != AggGMean && s.Aggregate != AggHMean }

// specs defines the objectives, in the order every per-objective series
// uses. Appending a line adds an objective everywhere.
var specs = []Spec{
	{MeanRecall, "mean recall", AggMean, NoConstraint, true},
	{MinRecall, "min recall", AggSoftMin, NoConstraint, true},
	{GMean, "G-mean of recalls", AggGMean, NoConstraint, true},
	{HMean, "H-mean of recalls", AggHMean, NoConstraint, true},
	{MinHTRecall, "min of head and tail recall", AggSoftMinHT, NoConstraint, false},
	{MeanRecallCov, "mean recall s.t. coverage", AggMean, ClassCoverage, true},
	{HMeanCov, "H-mean s.t. coverage", AggHMean, ClassCoverage, true},
	{MeanRecallHTCov, "mean recall s.t. head/tail coverage", AggMean, GroupCoverage, false},
	{HMeanHTCov, "H-mean s.t. head/tail coverage", AggHMean, GroupCoverage, false},
	{"gmean@cov", "G-mean s.t. coverage", AggGMean, ClassCoverage, false},
}

// Objectives returns all objectives in a fixed order; callers index
// per-objective series by it (in memory only: what is stored names them).
func Objectives() []Objective {
	out := make([]Objective, len(specs))
	for i, s := range specs {
		out[i] = s.Name
	}
	return out
}

// Index is o's position in Objectives(), -1 if o is no objective.
func (o Objective) Index() int {
	for i, s := range specs {
		if s.Name == o {
			return i
		}
	}
	return -1
}

// In is o's value in vals, a per-objective series in Objectives() order
// (a summary's TestObjAfter, a refresh's Objectives); NaN if o is no
// objective or vals stops short of it.
func (o Objective) In(vals []float64) float64 {
	if i := o.Index(); i >= 0 && i < len(vals) {
		return vals[i]
	}
	return math.NaN()
}

// Specs returns every objective's description, in Objectives() order.
func Specs() []Spec { return append([]Spec(nil), specs...) }

// Spec returns o's description; false if o is no objective.
func (o Objective) Spec() (Spec, bool) {
	for _, s := range specs {
		if s.Name == o {
			return s, true
		}
	}
	return Spec{}, false
}

// Title is o's name for people, or o itself if it is no objective.
func (o Objective) Title() string {
	if s, ok := o.Spec(); ok {
		return s.Title
	}
	return string(o)
}

// ParseObjective returns the objective named s; the error lists the valid
// names, and the nearest first when s looks like a typo of one.
func ParseObjective(s string) (Objective, error) {
	if _, ok := Objective(s).Spec(); ok {
		return Objective(s), nil
	}
	names := make([]string, len(specs))
	for i, sp := range specs {
		names[i] = string(sp.Name)
	}
	return "", fmt.Errorf("metric: unknown objective %q%s (valid: %s)", s, suggest.DidYouMean(s, names), strings.Join(names, ", "))
}

// An objective's multipliers are its aggregate's followed by its
// constraint's: one per class, one per group (head, tail) or none.
func (a Aggregate) lambdas(K int) int  { return multipliers(K, a == AggSoftMin, a == AggSoftMinHT) }
func (c Constraint) lambdas(K int) int { return multipliers(K, c == ClassCoverage, c == GroupCoverage) }

func multipliers(K int, perClass, perGroup bool) int {
	switch {
	case perClass:
		return K
	case perGroup:
		return 2
	}
	return 0
}

// nLambda is the number of Lagrange multipliers obj uses with K classes.
func (o Objective) nLambda(K int) int {
	s, _ := o.Spec()
	return s.Aggregate.lambdas(K) + s.Constraint.lambdas(K)
}

// usesTail reports whether obj depends on the head/tail split.
func (o Objective) usesTail() bool {
	s, _ := o.Spec()
	return s.Aggregate == AggSoftMinHT || s.Constraint == GroupCoverage
}

func (o Objective) valid() bool { _, ok := o.Spec(); return ok }

// Params holds the multiplier hyperparameters. Zero values mean the paper's
// defaults (see WithDefaults).
type Params struct {
	// Omega is the soft-min sharpness ω of the min-recall multipliers.
	// Default 40 if K ≤ 10, else 20.
	Omega float64
	// Alpha sets the coverage target α/K. Default 0.95.
	Alpha float64
	// Tau is the coverage multiplier temperature τ. Default 0.01.
	Tau float64
	// LambdaMax is the largest coverage multiplier λ_max. Default 100.
	LambdaMax float64

	// The coverage margin: the coverage multipliers (and the optimized ψ)
	// aim at α/K + δ_g instead of the bound α/K (docs/method.md, "The
	// coverage margin"). With Conf > 0, δ_g is the margin a one-sided
	// normal bound at confidence Conf gives the group's share of the N
	// validation predictions, from its variance at C given the class
	// counts (CoverageMargin, Spread); else it is Margin for every
	// constraint. Zero everywhere: no margin (the paper). The reported ψ
	// of every objective (Values) keeps the bound α/K.
	Conf   float64
	N      int
	Margin float64
	// Family > 1 makes the bound at Conf hold for every one of Family
	// constraints at once (Bonferroni: each at 1 − (1−Conf)/Family), and
	// NTest > 0 adds the sampling error of a test set of NTest samples
	// to the validation set's: δ = z·sqrt(spread·(1/N + 1/NTest))
	// (docs/method.md, "The coverage guarantee"). Zero: one class alone,
	// on the validation set's error only.
	Family int
	NTest  int
}

// WithDefaults returns p with every zero field replaced by its default for K classes.
func (p Params) WithDefaults(K int) Params {
	if p.Omega == 0 {
		p.Omega = 40
		if K > 10 {
			p.Omega = 20
		}
	}
	if p.Alpha == 0 {
		p.Alpha = 0.95
	}
	if p.Tau == 0 {
		p.Tau = 0.01
	}
	if p.LambdaMax == 0 {
		p.LambdaMax = 100
	}
	return p
}

// Validate reports an error if a field is negative or not finite, if Conf
// is not below 1, or if Conf is set without the validation size N.
// Zero fields are valid: they stand for the defaults.
func (p Params) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"Omega", p.Omega}, {"Alpha", p.Alpha}, {"Tau", p.Tau}, {"LambdaMax", p.LambdaMax}, {"Conf", p.Conf}, {"Margin", p.Margin}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			return fmt.Errorf("metric: Params.%s = %v, want finite and non-negative", f.name, f.v)
		}
	}
	if p.Conf >= 1 {
		return fmt.Errorf("metric: Params.Conf = %v, want a confidence in (0, 1)", p.Conf)
	}
	if p.Family < 0 || p.NTest < 0 {
		return fmt.Errorf("metric: Params.Family = %d, NTest = %d, want ≥ 0", p.Family, p.NTest)
	}
	if p.Conf > 0 && p.N < 1 {
		return fmt.Errorf("metric: a coverage margin at confidence %v needs the validation size, got N = %d", p.Conf, p.N)
	}
	return nil
}

// Bound is the paper's coverage bound α/K: what a constraint is met
// against wherever it is reported.
func (p Params) Bound(K int) float64 { return p.WithDefaults(K).Alpha / float64(K) }

// aim is the coverage the multipliers aim at for a constraint over size
// classes (1 for a class, |H| or |T| for a head/tail group): α/K + δ, and
// never above 1/K. With a confidence, δ is the one-sided normal bound on
// the group's validation share at that confidence, z_q·sqrt(spread/N),
// divided by size (the group's coverage is the mean over its classes),
// where spread is N times the variance of the share given the class
// counts of the validation set (Spread); otherwise δ is the margin set by
// hand. The coverages sum to 1, so an aim above 1/K cannot be met by every
// class (or both groups): its multipliers would never fall to 0 and would
// only shrink ψ's normaliser; the aim stops at 1/K, where every constraint
// can just hold (docs/method.md, "The coverage margin"). Without a margin
// the aim is α/K, whatever α. p must have its defaults (WithDefaults).
func (p Params) aim(K, size int, spread float64) float64 {
	bound := p.Alpha / float64(K)
	var d float64
	if p.Conf > 0 {
		d = p.familyMargin(spread) / float64(size)
	} else {
		d = p.Margin
	}
	if d == 0 {
		return bound
	}
	return max(bound, min(bound+d, 1/float64(K)))
}

// familyMargin is CoverageMargin at the confidence each of p.Family
// constraints needs for all to hold at p.Conf, with the test set's
// sampling error added where p.NTest is set.
func (p Params) familyMargin(spread float64) float64 {
	conf := p.Conf
	if p.Family > 1 {
		conf = 1 - (1-p.Conf)/float64(p.Family)
	}
	if p.NTest > 0 {
		spread *= 1 + float64(p.N)/float64(p.NTest)
	}
	return CoverageMargin(spread, p.N, conf)
}

// CoverageMargin is how far above the bound a validation share must be
// for a one-sided normal bound at confidence conf to put the model's
// share at the bound or above:
//
//	δ = z_conf·sqrt(spread/n),  z_conf = Φ⁻¹(conf),
//
// where spread/n is the variance of the share measured on n validation
// samples (Spread). It panics unless 0 < conf < 1, spread ≥ 0 and n ≥ 1.
func CoverageMargin(spread float64, n int, conf float64) float64 {
	if !(conf > 0 && conf < 1) || !(spread >= 0) || n < 1 {
		panic(fmt.Sprintf("metric: CoverageMargin(%v, %d, %v)", spread, n, conf))
	}
	z := math.Sqrt2 * math.Erfinv(2*conf-1)
	return z * math.Sqrt(spread/float64(n))
}

// Spread is N times the variance of the share of validation predictions
// that fall in the classes in (a class, or a head/tail group), given the
// validation set's class counts — it is sampled class by class, so only
// the predictions vary (docs/method.md, "The coverage margin"). With
// n_k = π_k·N samples of class k, each predicted into the group with
// probability q_k = S_k/π_k, S_k = Σ_{j∈in} C_kj:
//
//	Var = Σ_k (n_k/N)²·q_k(1 − q_k)/n_k = (1/N)·Σ_k S_k·(1 − S_k/π_k).
//
// C is the joint confusion matrix (rows true class, summing to 1).
func Spread(C mat.Matrix, in []bool) (float64, error) {
	st, err := load(C, nil)
	if err != nil {
		return 0, err
	}
	if len(in) != st.k {
		return 0, fmt.Errorf("metric: Spread: %d flags for %d classes", len(in), st.k)
	}
	return st.spread(in), nil
}

func (st *state) spread(in []bool) float64 {
	var v float64
	for k := range st.k {
		var s float64
		for j, ok := range in {
			if ok {
				s += st.c[k*st.k+j]
			}
		}
		v += s * max(0, 1-s/st.prior[k])
	}
	return v
}

// spreads is Spread of every class, then of the head and of the tail, in
// O(K²).
func (st *state) spreads(tail []bool) []float64 {
	K := st.k
	out := make([]float64, K+2)
	for k := range K {
		row, pk := st.c[k*K:(k+1)*K], st.prior[k]
		var h, t float64
		for j, c := range row {
			out[j] += c * max(0, 1-c/pk)
			if tail[j] {
				t += c
			} else {
				h += c
			}
		}
		out[K] += h * max(0, 1-h/pk)
		out[K+1] += t * max(0, 1-t/pk)
	}
	return out
}

// noMargin is p aiming at the bound itself: the paper's ψ, which every
// reported value uses.
func (p Params) noMargin() Params {
	p.Conf, p.N, p.Margin, p.Family, p.NTest = 0, 0, 0, 0, 0
	return p
}

// sumTol is how far the total of C and each row's prior may be off,
// enough for counts/N rounding, far below one sample in any real split.
const sumTol = 1e-6

// Check validates a joint confusion matrix: at least 2 classes, square,
// finite non-negative entries summing to 1 within 1e-6, and every class
// present in the validation set (positive prior). If prior is not nil,
// row i must sum to prior[i] within 1e-6. Check panics if prior is not
// nil and its length differs from the size of C.
func Check(C mat.Matrix, prior []float64) error {
	_, err := load(C, prior)
	return err
}

// state is C copied row-major with the quantities every formula uses.
// Copying also lets Grad write into a dst that aliases C.
type state struct {
	k               int
	c               []float64
	prior, rec, cov []float64

	sp     []float64 // marginSpreads' last result, for the tail spTail
	spTail []bool
}

func load(C mat.Matrix, prior []float64) (*state, error) {
	r, c := C.Dims()
	if r != c {
		return nil, fmt.Errorf("metric: confusion matrix is %d×%d, want square", r, c)
	}
	K := r
	if K < 2 {
		return nil, fmt.Errorf("metric: confusion matrix is %d×%d, want at least 2 classes", r, c)
	}
	if prior != nil && len(prior) != K {
		panic(fmt.Sprintf("metric: prior has length %d, want %d", len(prior), K))
	}
	st := &state{
		k:     K,
		c:     make([]float64, K*K),
		prior: make([]float64, K),
		rec:   make([]float64, K),
		cov:   make([]float64, K),
	}
	// Row access without the per-entry interface call for the common case.
	d, _ := C.(*mat.Dense)
	var total float64
	for i := 0; i < K; i++ {
		var row []float64
		if d != nil {
			row = d.RawRowView(i)
		}
		for j := 0; j < K; j++ {
			var v float64
			if row != nil {
				v = row[j]
			} else {
				v = C.At(i, j)
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("metric: confusion matrix entry (%d,%d) = %v is not finite", i, j, v)
			}
			if v < 0 {
				return nil, fmt.Errorf("metric: confusion matrix entry (%d,%d) = %v is negative", i, j, v)
			}
			st.c[i*K+j] = v
			st.prior[i] += v
			st.cov[j] += v
		}
		total += st.prior[i]
	}
	if math.Abs(total-1) > sumTol {
		return nil, fmt.Errorf("metric: confusion matrix sums to %v, want 1 (joint C_ij = #{y=i,pred=j}/N)", total)
	}
	for i, p := range st.prior {
		if p == 0 {
			return nil, fmt.Errorf("metric: class %d has no validation samples (row %d sums to 0)", i, i)
		}
		if prior != nil && !(math.Abs(p-prior[i]) <= sumTol) {
			return nil, fmt.Errorf("metric: confusion matrix row %d sums to %v, want prior %v", i, p, prior[i])
		}
		st.rec[i] = st.c[i*K+i] / p
	}
	return st, nil
}

// TailSplit marks the tail classes: the ⌊0.1·K⌋ least frequent (at least
// one) by counts. On ties (counts equal to a relative 1e-9) the higher class
// index counts as less frequent; a NaN count is the least frequent of all. counts are the labeled
// training counts or, where unknown, the prior.
func TailSplit(counts []float64) []bool {
	K := len(counts)
	tail := make([]bool, K)
	if K == 0 {
		return tail
	}
	key := func(i int) float64 {
		if math.IsNaN(counts[i]) {
			return math.Inf(-1)
		}
		return counts[i]
	}
	idx := make([]int, K)
	for i := range idx {
		idx[i] = i
	}
	// Least frequent first. Counts within a relative 1e-9 tie, so a prior
	// summed from equal class counts splits by index, not by rounding noise;
	// distinct integer counts below 1e9 never tie.
	slices.SortFunc(idx, func(a, b int) int {
		ka, kb := key(a), key(b)
		if ka == kb || nearlyEqual(ka, kb) {
			return cmp.Compare(b, a)
		}
		return cmp.Compare(ka, kb)
	})
	for _, i := range idx[:max(1, K/10)] {
		tail[i] = true
	}
	return tail
}

// nearlyEqual reports whether finite a and b agree to a relative 1e-9.
func nearlyEqual(a, b float64) bool {
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return false
	}
	return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

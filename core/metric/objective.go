package metric

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
)

// eps clamps recalls where the G-mean and H-mean divide by them (or take
// their log), so a class with zero recall gives a finite ψ and D, not Inf/NaN.
const eps = 1e-7

// Multipliers returns the Lagrange multipliers of obj at the confusion
// matrix r was computed from: its aggregate's, then its constraint's. They
// are memoryless: recomputed from r alone at each refresh (paper, appendix
// "Updating the Lagrange multipliers").
//
//	soft min of recalls:      K values, softmax(−ω·rec)
//	soft min of head/tail:    (λ_H, λ_T) = softmax(−ω·(recall_H, recall_T))
//	class coverage:           K values, λ_j = max(0, λ_max·(1 − exp((cov_j − a_j)/τ)))
//	head/tail coverage:       (λ_H, λ_T) by the same rule, cov_g = mean cov_j over g
//
// where a_g = α/K + δ_g is the constraint's aim (Params.aim; α/K without
// a margin). A margin at a confidence (Params.Conf) needs C itself, not
// only its report: Multipliers panics with one; Evaluate computes them.
// An objective with none gets nil. Zero fields of p take their defaults.
// tail nil means TailSplit(r.Prior); a tail that leaves a group empty is a
// programming error here (NewReport has rejected it) and panics.
func Multipliers(obj Objective, r Report, tail []bool, p Params) []float64 {
	if p.Conf > 0 {
		panic("metric: Multipliers of a Report cannot take a margin at a confidence (it needs C): use Evaluate")
	}
	return lagrange(obj, r, tail, p, nil)
}

// lagrange is Multipliers with the Spread of every class, then of the
// head and of the tail (nil without a confidence margin).
func lagrange(obj Objective, r Report, tail []bool, p Params, spread []float64) []float64 {
	l, _ := lagrangeAims(obj, r, tail, p, spread)
	return l
}

// lagrangeAims is lagrange with the coverage each coverage multiplier aims
// at (α/K + δ; a class's, or the head's and the tail's group), nil for an
// objective without a coverage constraint.
func lagrangeAims(obj Objective, r Report, tail []bool, p Params, spread []float64) ([]float64, []float64) {
	l, aims, _ := lagrangeCov(obj, r, tail, p, spread)
	return l, aims
}

// lagrangeCov is lagrangeAims with the coverage each aim is compared with
// (a class's coverage, or a group's mean).
func lagrangeCov(obj Objective, r Report, tail []bool, p Params, spread []float64) ([]float64, []float64, []float64) {
	p = p.WithDefaults(r.K)
	s, _ := obj.Spec()
	if tail == nil {
		tail = TailSplit(r.Prior)
	}
	var l []float64
	switch s.Aggregate {
	case AggSoftMin:
		l = softmin(r.Recall, p.Omega)
	case AggSoftMinHT:
		h, t := groupMeans(r.Recall, tail)
		l = softmin([]float64{h, t}, p.Omega)
	}
	if spread == nil {
		spread = make([]float64, r.K+2)
	}
	var aims, cov []float64
	switch s.Constraint {
	case ClassCoverage:
		for j, c := range r.Coverage {
			a := p.aim(r.K, 1, spread[j])
			l, aims = append(l, covLambda(c, a, p)), append(aims, a)
		}
		cov = slices.Clone(r.Coverage)
	case GroupCoverage:
		h, t := groupMeans(r.Coverage, tail)
		nh, nt := groupSizes(tail)
		ah, at := p.aim(r.K, nh, spread[r.K]), p.aim(r.K, nt, spread[r.K+1])
		l, aims, cov = append(l, covLambda(h, ah, p), covLambda(t, at, p)), []float64{ah, at}, []float64{h, t}
	}
	return l, aims, cov
}

// Integrate is one refresh of the coverage multipliers' memory
// (docs/method.md, "Multipliers that reach the aim"): each term
// accumulates its constraint's shortfall, I_g ← clamp(I_g + rate·(a_g −
// cov_g), 0, λ_max), from the aims and coverages of e. I nil (the first
// refresh) starts from zeros; an objective without a coverage constraint
// has none (nil). Zero fields of p take their defaults.
func Integrate(I []float64, e Eval, rate float64, p Params) []float64 {
	if len(e.Aims) == 0 {
		return nil
	}
	p = p.WithDefaults(e.Report.K)
	out := make([]float64, len(e.Aims))
	for g, a := range e.Aims {
		var prev float64
		if g < len(I) {
			prev = I[g]
		}
		out[g] = min(p.LambdaMax, max(0, prev+rate*(a-e.Cov[g])))
	}
	return out
}

// softmin returns softmax(−ω·x), shifted by min x so no exp overflows.
func softmin(x []float64, omega float64) []float64 {
	m := math.Inf(1)
	for _, v := range x {
		m = min(m, v)
	}
	w := make([]float64, len(x))
	var s float64
	for i, v := range x {
		w[i] = math.Exp(-omega * (v - m))
		s += w[i]
	}
	for i := range w {
		w[i] /= s
	}
	return w
}

// covLambda is the coverage multiplier of a coverage c aiming at aim; exp
// overflowing to +Inf for a well-covered class still gives max(0, −Inf) = 0.
func covLambda(c, aim float64, p Params) float64 {
	return math.Max(0, p.LambdaMax*(1-math.Exp((c-aim)/p.Tau)))
}

// Psi evaluates ψ_obj at C with the multipliers held fixed at lambda (as
// returned by Multipliers; constants for the derivative). Where ψ uses the
// G-mean or H-mean, recalls are clamped below at 1e-7. Coverage objectives
// are [base + Σ_g λ_g (cov_g − a_g)] / (max_g λ_g + 1), a_g the aim
// (Params.aim: α/K + δ_g; α/K itself without a margin).
//
// Psi returns an error if C fails Check, p or lambda hold a negative or
// non-finite value, or a head/tail objective gets a split with an empty
// group; tail nil means TailSplit of the prior. A lambda or tail of the
// wrong length panics.
func Psi(obj Objective, C mat.Matrix, tail []bool, lambda []float64, p Params) (float64, error) {
	_, t, err := loadTerms(obj, C, tail, lambda, p)
	if err != nil {
		return 0, err
	}
	return t.psi, nil
}

// loadTerms checks C and computes obj's terms at it with λ fixed: what Psi,
// Grad and Linearize share.
func loadTerms(obj Objective, C mat.Matrix, tail []bool, lambda []float64, p Params) (*state, terms, error) {
	st, err := load(C, nil)
	if err != nil {
		return nil, terms{}, err
	}
	t, err := st.terms(obj, tail, lambda, p)
	if err != nil {
		return nil, terms{}, err
	}
	return st, t, nil
}

// Grad writes D_kl = ∂ψ/∂C̃_kl into dst, with λ fixed at lambda and each row
// of C reparametrised as C_k = π_k·softmax(C̃_k), π taken from C (docs/method.md, D = ∂ψ/∂C̃):
//
//	D_kl = Σ_m (∂ψ/∂C_km)·C_km·(δ_ml − C_kl/π_k).
//
// Each row of D sums to zero. dst must be K×K or empty (it is then
// resized); any other shape panics. Errors and tail are as for Psi.
func Grad(dst *mat.Dense, obj Objective, C mat.Matrix, tail []bool, lambda []float64, p Params) error {
	st, t, err := loadTerms(obj, C, tail, lambda, p)
	if err != nil {
		return err
	}
	st.grad(dst, t)
	return nil
}

// Eval is ψ, D and the multipliers at one confusion matrix, with the
// coverage each coverage multiplier aims at (Aims: K for a per-class
// constraint, head and tail for a group one; nil without one).
type Eval struct {
	Psi    float64
	D      *mat.Dense
	Lambda []float64
	Aims   []float64
	Cov    []float64 // what each aim is compared with: a class's coverage, or a group's mean
	Report Report
}

// Evaluate computes the report, the multipliers, ψ and D of obj at C in one
// call. Errors and tail are as for Psi and NewReport.
func Evaluate(obj Objective, C mat.Matrix, tail []bool, p Params) (Eval, error) {
	var e Eval
	if err := EvaluateTo(&e, obj, C, tail, p); err != nil {
		return Eval{}, err
	}
	return e, nil
}

// EvaluateTo is Evaluate writing into dst, reusing dst.D if it is not nil
// (it must then be K×K or empty). On error dst is unchanged.
func EvaluateTo(dst *Eval, obj Objective, C mat.Matrix, tail []bool, p Params) error {
	return EvaluateMemory(dst, obj, C, tail, p, nil)
}

// EvaluateMemory is EvaluateTo with coverage multipliers that remember:
// each is min(λ_max, λ_g + I_g), λ_g the memoryless multiplier and I_g its
// integral term (Integrate; one per coverage multiplier, nil for none).
// An I of the wrong length panics.
func EvaluateMemory(dst *Eval, obj Objective, C mat.Matrix, tail []bool, p Params, I []float64) error {
	st, err := load(C, nil)
	if err != nil {
		return err
	}
	if !obj.valid() {
		_, err := ParseObjective(string(obj))
		return err
	}
	if err := p.Validate(); err != nil {
		return err
	}
	tail, err = resolveTail(tail, st.prior)
	if err != nil {
		return err
	}
	r, err := st.report(tail)
	if err != nil {
		return err
	}
	lambda, aims, cov := lagrangeCov(obj, r, tail, p, st.marginSpreads(tail, p))
	if I != nil {
		if len(I) != len(aims) {
			panic(fmt.Sprintf("metric: %s takes %d integral terms, got %d", obj, len(aims), len(I)))
		}
		lmax := p.WithDefaults(st.k).LambdaMax
		lc := lambda[len(lambda)-len(aims):]
		for g, v := range I {
			lc[g] = min(lmax, lc[g]+v)
		}
	}
	t, err := st.terms(obj, tail, lambda, p)
	if err != nil {
		return err
	}
	if dst.D == nil {
		dst.D = mat.NewDense(st.k, st.k, nil)
	}
	st.grad(dst.D, t)
	dst.Psi, dst.Lambda, dst.Aims, dst.Cov, dst.Report = t.psi, lambda, aims, cov, r
	return nil
}

// terms is ψ with its derivative in the form docs/method.md gives it:
//
//	D_kl = scale·[a_k·(δ_kl − C_kl/π_k) + μ_l·C_kl − (C_kl/π_k)·Σ_m μ_m·C_km]
//
// where a_k = f_k·rec_k (computed as D always has, so D stays bit for bit),
// f_k = ∂f/∂rec_k for the recall part f, and μ_j =
// ∂/∂cov_j of the coverage part (nil if there is none).
type terms struct {
	psi, scale float64
	f, a, mu   []float64
}

func (st *state) terms(obj Objective, tail []bool, lambda []float64, p Params) (terms, error) {
	K := st.k
	if !obj.valid() {
		_, err := ParseObjective(string(obj))
		return terms{}, err
	}
	if err := p.Validate(); err != nil {
		return terms{}, err
	}
	p = p.WithDefaults(K)
	if n := obj.nLambda(K); len(lambda) != n {
		panic(fmt.Sprintf("metric: %s with K=%d takes %d multipliers, got %d", obj, K, n, len(lambda)))
	}
	for i, l := range lambda {
		if math.IsNaN(l) || math.IsInf(l, 0) || l < 0 {
			return terms{}, fmt.Errorf("metric: multiplier %d = %v, want finite and non-negative", i, l)
		}
	}
	var nh, nt int
	if obj.usesTail() {
		var err error
		if tail, err = resolveTail(tail, st.prior); err != nil {
			return terms{}, err
		}
		nh, nt = groupSizes(tail)
	} else if tail != nil && len(tail) != K {
		panic(fmt.Sprintf("metric: tail has length %d, want %d", len(tail), K))
	}

	spec, _ := obj.Spec()
	na := spec.Aggregate.lambdas(K)
	la, lc := lambda[:na], lambda[na:]
	t := terms{scale: 1, f: make([]float64, K), a: make([]float64, K)}
	var base float64
	switch spec.Aggregate {
	case AggMean:
		for k, r := range st.rec {
			base += r
			t.f[k] = 1 / float64(K)
			t.a[k] = r / float64(K)
		}
		base /= float64(K)
	case AggSoftMin:
		for k, r := range st.rec {
			base += la[k] * r
			t.f[k] = la[k]
			t.a[k] = la[k] * r
		}
	case AggSoftMinHT:
		for k, r := range st.rec {
			w := la[0] / float64(nh)
			if tail[k] {
				w = la[1] / float64(nt)
			}
			base += w * r
			t.f[k] = w
			t.a[k] = w * r
		}
	case AggGMean:
		// GM = exp(mean log r̂), ∂GM/∂rec_k = GM/(K·r̂_k), r̂ = max(rec, eps).
		var logs float64
		for _, r := range st.rec {
			logs += math.Log(max(r, eps))
		}
		base = math.Exp(logs / float64(K))
		for k, r := range st.rec {
			t.f[k] = base / float64(K) / max(r, eps)
			t.a[k] = base / float64(K) * r / max(r, eps)
		}
	case AggHMean:
		// HM = K/Σ 1/r̂, ∂HM/∂rec_k = HM²/(K·r̂_k²), r̂ = max(rec, eps).
		var inv float64
		for _, r := range st.rec {
			inv += 1 / max(r, eps)
		}
		base = float64(K) / inv
		for k, r := range st.rec {
			rh := max(r, eps)
			t.f[k] = base * base / float64(K) / (rh * rh)
			t.a[k] = base * base / float64(K) * r / (rh * rh)
		}
	}

	var pen, lmax float64
	switch spec.Constraint {
	case ClassCoverage:
		sp := st.marginSpreads(tail, p)
		t.mu = make([]float64, K)
		for j, l := range lc {
			var v float64
			if sp != nil {
				v = sp[j]
			}
			pen += l * (st.cov[j] - p.aim(K, 1, v))
			t.mu[j] = l
			lmax = max(lmax, l)
		}
	case GroupCoverage:
		// Σ_g λ_g·cov_g = Σ_j μ_j·cov_j with μ_j = λ_g(j)/|g(j)|.
		ch, ct := groupMeans(st.cov, tail)
		sh, stl := 0.0, 0.0
		if sp := st.marginSpreads(tail, p); sp != nil {
			sh, stl = sp[K], sp[K+1]
		}
		pen = lc[0]*(ch-p.aim(K, nh, sh)) + lc[1]*(ct-p.aim(K, nt, stl))
		lmax = max(lc[0], lc[1])
		t.mu = make([]float64, K)
		for j := range t.mu {
			t.mu[j] = lc[0] / float64(nh)
			if tail[j] {
				t.mu[j] = lc[1] / float64(nt)
			}
		}
	}
	if t.mu != nil {
		// The normaliser is a constant for the derivative: λ is fixed.
		t.scale = 1 / (lmax + 1)
	}
	t.psi = t.scale * (base + pen)
	return t, nil
}

// marginSpreads is st.spreads where the margin needs them (a confidence),
// else nil. They depend on C and the tail only, so the multipliers and ψ
// of one evaluation share one computation.
func (st *state) marginSpreads(tail []bool, p Params) []float64 {
	if p.Conf == 0 {
		return nil
	}
	if tail == nil {
		tail = TailSplit(st.prior)
	}
	if st.sp == nil || !slices.Equal(st.spTail, tail) {
		st.sp, st.spTail = st.spreads(tail), slices.Clone(tail)
	}
	return st.sp
}

// square sizes an empty dst K×K and panics on any other shape.
func square(dst *mat.Dense, K int) {
	if dst.IsEmpty() {
		dst.ReuseAs(K, K)
	}
	if r, c := dst.Dims(); r != K || c != K {
		panic(fmt.Sprintf("metric: dst is %d×%d, want %d×%d", r, c, K, K))
	}
}

func (st *state) grad(dst *mat.Dense, t terms) {
	K := st.k
	square(dst, K)
	for k := 0; k < K; k++ {
		row := st.c[k*K : (k+1)*K]
		pk := st.prior[k]
		var nu float64
		for m, mu := range t.mu {
			nu += mu * row[m]
		}
		a := t.a[k]
		out := dst.RawRowView(k)
		for l, c := range row {
			q := c / pk
			d := -(a + nu) * q
			if t.mu != nil {
				d += t.mu[l] * c
			}
			if l == k {
				d += a
			}
			out[l] = t.scale * d
		}
	}
}

// Linearize writes into dst the linear metric that agrees with ψ to first
// order at C, with the prior and the multipliers held fixed at lambda:
//
//	L_ij = ∂ψ/∂C_ij = scale·(δ_ij·f_i/π_i + μ_j)
//
// with f_i = ∂f/∂rec_i of the recall part, μ_j = ∂/∂cov_j of the coverage
// part and scale = 1/(max λ + 1) for the constrained objectives, else 1
// (docs/method.md, "Baselines"). For min-recall L = diag(λ_i/π_i); for mean
// recall s.t. coverage L_ij = scale·(δ_ij/(K·π_i) + λ_j). dst must be K×K or
// empty (it is then resized); any other shape panics. Errors and tail are as
// for Psi.
func Linearize(dst *mat.Dense, obj Objective, C mat.Matrix, tail []bool, lambda []float64, p Params) error {
	st, t, err := loadTerms(obj, C, tail, lambda, p)
	if err != nil {
		return err
	}
	K := st.k
	square(dst, K)
	for i := 0; i < K; i++ {
		out := dst.RawRowView(i)
		for j := range out {
			var v float64
			if t.mu != nil {
				v = t.mu[j]
			}
			if i == j {
				v += t.f[i] / st.prior[i]
			}
			out[j] = t.scale * v
		}
	}
	return nil
}

// Values returns ψ of every objective, in Objectives() order, at C, each
// with its own multipliers: what Evaluate(o, …).Psi gives for each o
// without a coverage margin, without computing any D. These are the
// reported values: a constraint's ψ keeps the paper's bound α/K whatever
// margin the optimizer aims with. Errors and tail are as for Evaluate.
func Values(C mat.Matrix, tail []bool, p Params) ([]float64, error) {
	st, err := load(C, nil)
	if err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	p = p.noMargin()
	if tail, err = resolveTail(tail, st.prior); err != nil {
		return nil, err
	}
	r, err := st.report(tail)
	if err != nil {
		return nil, err
	}
	objs := Objectives()
	out := make([]float64, len(objs))
	for i, o := range objs {
		t, err := st.terms(o, tail, Multipliers(o, r, tail, p), p)
		if err != nil {
			return nil, err
		}
		out[i] = t.psi
	}
	return out, nil
}

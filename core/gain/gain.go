// Package gain computes the SelMix gain matrix G (paper Theorem 1) and the
// mixup distribution P derived from it.
//
// G_ij is the first-order change of the objective ψ when the head W takes a
// gradient step on mixup pairs (i, j) approximated by the mixed centroid
// ζ_ij = β̄ z_i + (1−β̄) z_j, with p_ij = softmax(Wᵀζ_ij + b):
//
//	paper:    G_ij = (Z ζ_ij)ᵀ D (e_i − p_ij)
//	official: G_ij = (Z z_i)ᵀ D e_i − (Z ζ_ij)ᵀ D p_ij   (the authors' code)
//
// where D = ∂ψ/∂C̃ (K×K) and Z stacks the class centroids z_k as rows.
package gain

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"selmix/internal/suggest"
)

// Form selects which variant of the gain formula is computed.
type Form int

const (
	// Paper is Theorem 1 of the paper: G_ij = (Z ζ_ij)ᵀ D (e_i − p_ij).
	Paper Form = iota
	// Official is the authors' public code, whose positive term uses z_i
	// instead of ζ_ij: G_ij = (Z z_i)ᵀ D e_i − (Z ζ_ij)ᵀ D p_ij.
	Official
	// Samples takes the step on mixed samples rather than mixed centroids,
	// with D = ∂ψ/∂C^soft (Estimate; docs/method.md, "The samples gain").
	// Computer.Gain does not compute it: it needs the samples.
	Samples
)

// ParseForm parses "paper", "official" or "samples" (case-insensitive).
func ParseForm(s string) (Form, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "paper":
		return Paper, nil
	case "official":
		return Official, nil
	case "samples":
		return Samples, nil
	}
	return 0, fmt.Errorf("gain: unknown gain form %q (want paper, official or samples)", s)
}

// MarshalText writes the form's name, so configuration files say "paper".
func (f Form) MarshalText() ([]byte, error) {
	if f != Paper && f != Official && f != Samples {
		return nil, fmt.Errorf("gain: unknown form %d", int(f))
	}
	return []byte(f.String()), nil
}

// UnmarshalText reads a form's name (see ParseForm).
func (f *Form) UnmarshalText(b []byte) error {
	v, err := ParseForm(string(b))
	if err == nil {
		*f = v
	}
	return err
}

// String returns "paper", "official" or "samples".
func (f Form) String() string {
	switch f {
	case Paper:
		return "paper"
	case Official:
		return "official"
	case Samples:
		return "samples"
	}
	return fmt.Sprintf("Form(%d)", int(f))
}

// Policy selects how the mixup distribution is derived from G.
type Policy string

const (
	// SelMix samples pairs from softmax(s·G) restricted to positive gains.
	SelMix Policy = "selmix"
	// Uniform samples all K² pairs equally (plain mixup over class pairs).
	Uniform Policy = "uniform"
	// Greedy always draws the pair with the largest gain.
	Greedy Policy = "greedy"
	// None draws no pair at all: fine-tuning uses plain cross-entropy.
	None Policy = "none"
	// CSST draws no pair: fine-tuning uses the consistent cost-sensitive
	// loss of the objective's linearisation (docs/method.md, "Baselines").
	CSST Policy = "csst"
	// MiSLAS2 draws no pair: the head is re-trained on class-balanced
	// batches with label-aware smoothing, the backbone frozen (MiSLAS
	// stage 2; docs/method.md, "Baselines").
	MiSLAS2 Policy = "mislas2"
	// Resample draws pairs from SelMix's P but does not mix them: both
	// samples of a pair are trained on at full weight with their own
	// labels (Teney et al., ICML 2024: selmix − resample is what the
	// mixing adds; docs/method.md, "What does the mixup add?").
	Resample Policy = "resample"
)

// policies lists every policy, in the order pickers and tables show them.
var policies = []Policy{SelMix, Uniform, Greedy, None, CSST, MiSLAS2, Resample}

// Policies returns every policy, in the order pickers and tables show them.
func Policies() []Policy { return append([]Policy(nil), policies...) }

// Mixes reports whether p draws mixup pairs from P; the others fine-tune
// with a loss of their own and their P is all zeros.
func (p Policy) Mixes() bool { return p == SelMix || p == Uniform || p == Greedy }

// DrawsPairs reports whether p draws class pairs from P: the policies that
// mix, and Resample, which trains on the pair's two samples unmixed.
func (p Policy) DrawsPairs() bool { return p.Mixes() || p == Resample }

// Describe is p in one line, for pickers ("" for an unknown policy).
func (p Policy) Describe() string {
	switch p {
	case SelMix:
		return "mixup on pairs drawn from softmax(s·G) over the positive gains"
	case Uniform:
		return "mixup on pairs drawn uniformly"
	case Greedy:
		return "mixup on the pair of largest gain only"
	case None:
		return "plain cross-entropy, no pairs"
	case CSST:
		return "baseline: CSST's cost-sensitive loss for the objective"
	case MiSLAS2:
		return "baseline: MiSLAS stage 2, head only, label-aware smoothing"
	case Resample:
		return "SelMix's pairs unmixed: CE on both samples (what mixup adds)"
	}
	return ""
}

// ParsePolicy parses one of Policies() (case-insensitive).
func ParsePolicy(s string) (Policy, error) {
	p := Policy(strings.ToLower(strings.TrimSpace(s)))
	if slices.Contains(policies, p) {
		return p, nil
	}
	names := make([]string, len(policies))
	for i, q := range policies {
		names[i] = string(q)
	}
	return "", fmt.Errorf("gain: unknown policy %q%s (want %s)", s, suggest.DidYouMean(string(p), names), strings.Join(names, ", "))
}

// BetaBar returns β̄, the mean of U[betaMin, 1]. It panics unless
// 0 ≤ betaMin ≤ 1.
func BetaBar(betaMin float64) float64 {
	if !(betaMin >= 0 && betaMin <= 1) {
		panic(fmt.Sprintf("gain: betaMin %v outside [0, 1]", betaMin))
	}
	return (1 + betaMin) / 2
}

// underflowLimit is the normaliser below which the separable softmax is not
// trusted: beyond ~460 nats of logit gap between the two factors the
// products E1·E2 lose precision and then underflow to 0 (giving 0/0).
const underflowLimit = 1e-200

// ErrNotFinite is returned (wrapped) when an input or the result holds a NaN
// or an infinity.
var ErrNotFinite = errors.New("gain: non-finite value")

// Computer computes gain matrices, keeping its workspace between calls so
// that repeated calls with the same K and d allocate no workspace. It is not safe for
// concurrent use. The zero value is ready to use.
type Computer struct {
	k int

	// K×K workspaces, reused across calls; grown only when K grows.
	m, a, r, e1, e2, t, s, dt []float64
	wt                        []float64 // Wᵀ, K×d
	z                         []float64 // Z when it has no raw storage, K×d
	row                       []float64 // per-pair logits for directNeg

	// guarded counts the pairs of the last call that needed the per-pair
	// stable softmax; tests use it to prove the guard path ran.
	guarded int
}

// Gain writes the gain matrix G (K×K) into dst, which must be empty or K×K.
//
// D is K×K, Z is K×d (centroids as rows), W is d×K, len(b) == K and
// 0 ≤ betaBar ≤ 1 (see BetaBar). A shape mismatch, an out-of-range betaBar
// or an unknown form panics. Non-finite values in the inputs, or a result
// that overflows, give an error wrapping ErrNotFinite; dst is then
// unspecified.
//
// The cost is O(K²d + K³) time, almost all of it in six matrix products
// (see mulABt), and O(K² + Kd) workspace: the K² per-pair softmaxes are
// never formed explicitly (see the comments in the body). dst may alias any
// input, as it is written last.
func (c *Computer) Gain(dst *mat.Dense, D, Z, W mat.Matrix, b []float64, betaBar float64, form Form) error {
	k, d := Z.Dims()
	if k == 0 || d == 0 {
		panic("gain: empty Z")
	}
	if r, cc := D.Dims(); r != k || cc != k {
		panic(fmt.Sprintf("gain: D is %d×%d, want %d×%d", r, cc, k, k))
	}
	if r, cc := W.Dims(); r != d || cc != k {
		panic(fmt.Sprintf("gain: W is %d×%d, want %d×%d", r, cc, d, k))
	}
	if len(b) != k {
		panic(fmt.Sprintf("gain: len(b) = %d, want %d", len(b), k))
	}
	if form != Paper && form != Official {
		panic(fmt.Sprintf("gain: Computer.Gain computes the centroid forms, not %v", form))
	}
	if math.IsNaN(betaBar) || math.IsInf(betaBar, 0) {
		return fmt.Errorf("%w: betaBar = %v", ErrNotFinite, betaBar)
	}
	if betaBar < 0 || betaBar > 1 {
		panic(fmt.Sprintf("gain: betaBar %v outside [0, 1]", betaBar))
	}
	if dst.IsEmpty() {
		dst.ReuseAs(k, k)
	} else if r, cc := dst.Dims(); r != k || cc != k {
		panic(fmt.Sprintf("gain: dst is %d×%d, want %d×%d", r, cc, k, k))
	}
	for _, in := range []struct {
		name string
		m    mat.Matrix
	}{{"D", D}, {"Z", Z}, {"W", W}} {
		if !matFinite(in.m) {
			return fmt.Errorf("%w in %s", ErrNotFinite, in.name)
		}
	}
	for _, v := range b {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w in b", ErrNotFinite)
		}
	}

	c.reuse(k, d)
	bb, cb := betaBar, 1-betaBar

	// Every product below is C = X·Yᵀ over row-major operands (mulABt), so
	// Z is used as is, and W and D are transposed once (O(Kd + K²)).
	zg := c.rowMajor(Z)
	wt := blas64.General{Rows: k, Cols: d, Stride: d, Data: c.wt}
	transposeInto(wt, W)
	dt := c.general(c.dt)
	transposeInto(dt, D)

	// M = Z Zᵀ holds all centroid inner products, A = Z W the logits of
	// every centroid: ζ_ij's logits are then β̄A_i + (1−β̄)A_j + b, and
	// (Z ζ_ij)_k = β̄M_ki + (1−β̄)M_kj, so everything is a function of K×K
	// matrices and d only enters through these two products.
	mg, ag, rg := c.general(c.m), c.general(c.a), c.general(c.r)
	gemmABt(mg, zg, zg, false)
	gemmABt(ag, zg, wt, false)
	// R = M D. Since M is symmetric, (Z ζ_ij)ᵀ D = β̄R_i + (1−β̄)R_j.
	gemmABt(rg, mg, dt, false)

	// exp separates over the two mixup ends: the unnormalised softmax of
	// ζ_ij is E1_il·E2_jl, so the K² softmaxes need only 2K² exps and the
	// sums over l become matrix products. Each row is shifted by its own
	// max, so every entry is in [0, 1] and the row max is exactly 1.
	a, r := c.a, c.r
	for i := range k {
		ai := a[i*k : (i+1)*k]
		m1, m2 := math.Inf(-1), math.Inf(-1)
		for l, v := range ai {
			m1 = math.Max(m1, bb*v)
			m2 = math.Max(m2, cb*v+b[l])
		}
		e1, e2 := c.e1[i*k:(i+1)*k], c.e2[i*k:(i+1)*k]
		for l, v := range ai {
			e1[l] = math.Exp(bb*v - m1)
			e2[l] = math.Exp(cb*v + b[l] - m2)
		}
	}

	// N = E1 E2ᵀ (the normalisers; reuses M, which is no longer needed) and
	// S = β̄(R∘E1)E2ᵀ + (1−β̄)E1(R∘E2)ᵀ, so that
	// Σ_l (β̄R_il + (1−β̄)R_jl)·p_ij,l = S_ij / N_ij.
	n := c.m
	e1g, e2g := c.general(c.e1), c.general(c.e2)
	tg, sg, ng := c.general(c.t), c.general(c.s), c.general(n)
	gemmABt(ng, e1g, e2g, false)
	for idx, v := range r {
		c.t[idx] = bb * v * c.e1[idx]
	}
	gemmABt(sg, tg, e2g, false)
	for idx, v := range r {
		c.t[idx] = cb * v * c.e2[idx]
	}
	gemmABt(sg, e1g, tg, true)

	c.guarded = 0
	for i := range k {
		ri := r[i*k : (i+1)*k]
		rii := ri[i]
		for j := range k {
			pos := rii
			if form == Paper {
				pos = bb*rii + cb*r[j*k+i]
			}
			var neg float64
			if nij := n[i*k+j]; nij >= underflowLimit {
				neg = c.s[i*k+j] / nij
			} else {
				c.guarded++
				neg = c.directNeg(i, j, b, bb, cb)
			}
			g := pos - neg
			if math.IsNaN(g) || math.IsInf(g, 0) {
				return fmt.Errorf("%w: G[%d,%d] = %v (inputs too large)", ErrNotFinite, i, j, g)
			}
			dst.Set(i, j, g)
		}
	}
	return nil
}

// directNeg returns Σ_l (β̄R_il + (1−β̄)R_jl)·p_ij,l with a per-pair softmax
// shifted by its own max, for the pairs whose separable normaliser
// underflowed. It costs K exps.
func (c *Computer) directNeg(i, j int, b []float64, bb, cb float64) float64 {
	k := c.k
	ai, aj := c.a[i*k:(i+1)*k], c.a[j*k:(j+1)*k]
	ri, rj := c.r[i*k:(i+1)*k], c.r[j*k:(j+1)*k]
	logit := c.row[:k]
	mx := math.Inf(-1)
	for l := range k {
		logit[l] = bb*ai[l] + cb*aj[l] + b[l]
		mx = math.Max(mx, logit[l])
	}
	var sum, num float64
	for l := range k {
		e := math.Exp(logit[l] - mx)
		sum += e
		num += (bb*ri[l] + cb*rj[l]) * e
	}
	return num / sum
}

// reuse sizes the workspaces for K classes and d features, allocating only
// when they are too small.
func (c *Computer) reuse(k, d int) {
	c.k = k
	grow := func(buf *[]float64, n int) {
		if cap(*buf) < n {
			*buf = make([]float64, n)
		}
		*buf = (*buf)[:n]
	}
	for _, buf := range []*[]float64{&c.m, &c.a, &c.r, &c.e1, &c.e2, &c.t, &c.s, &c.dt} {
		grow(buf, k*k)
	}
	grow(&c.wt, k*d)
	grow(&c.row, k)
}

func (c *Computer) general(data []float64) blas64.General {
	return blas64.General{Rows: c.k, Cols: c.k, Stride: c.k, Data: data[:c.k*c.k]}
}

// rowMajor returns m's own storage when it has one, else a copy in c.z.
func (c *Computer) rowMajor(m mat.Matrix) blas64.General {
	if rm, ok := m.(mat.RawMatrixer); ok {
		return rm.RawMatrix()
	}
	r, cols := m.Dims()
	if cap(c.z) < r*cols {
		c.z = make([]float64, r*cols)
	}
	g := blas64.General{Rows: r, Cols: cols, Stride: cols, Data: c.z[:r*cols]}
	for i := range r {
		for j := range cols {
			g.Data[i*cols+j] = m.At(i, j)
		}
	}
	return g
}

// transposeInto writes mᵀ into dst (which must be the transposed shape).
func transposeInto(dst blas64.General, m mat.Matrix) {
	if rm, ok := m.(mat.RawMatrixer); ok {
		src := rm.RawMatrix()
		for i := range src.Rows {
			for j, v := range src.Data[i*src.Stride : i*src.Stride+src.Cols] {
				dst.Data[j*dst.Stride+i] = v
			}
		}
		return
	}
	for i := range dst.Cols {
		for j := range dst.Rows {
			dst.Data[j*dst.Stride+i] = m.At(i, j)
		}
	}
}

// matFinite reports whether every element of m is finite.
func matFinite(m mat.Matrix) bool {
	if rm, ok := m.(mat.RawMatrixer); ok {
		raw := rm.RawMatrix()
		for i := range raw.Rows {
			for _, v := range raw.Data[i*raw.Stride : i*raw.Stride+raw.Cols] {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return false
				}
			}
		}
		return true
	}
	r, cc := m.Dims()
	for i := range r {
		for j := range cc {
			if v := m.At(i, j); math.IsNaN(v) || math.IsInf(v, 0) {
				return false
			}
		}
	}
	return true
}

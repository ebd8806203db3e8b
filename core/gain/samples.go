package gain

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// The samples form (docs/method.md, "The samples gain") estimates, for each
// class pair (a, b), the first-order change of ψ when the head (W, b) takes
// one SGD step on mixed samples of a and b — Theorem 1 takes that step at
// the mixed class centroids instead. With D = ∂ψ/∂C^soft, where
// C^soft_ij = (1/N) Σ_{y(x)=i} p_j(x) over the N validation samples, and
//
//	g(x)_l = p_l(x)·(D_{y,l} − Σ_m p_m(x)·D_{y,m}),
//	M = (1/N) Σ_x g(x)·z(x)ᵀ (K×d),   m_b = (1/N) Σ_x g(x),
//
// a step of size η along the mixed sample's negative cross-entropy
// gradient changes ψ by η·(ũ_a − softmax(f̃)·ũ), where for a draw of x of
// class a and x′ of class b and λ ∈ [β_min, 1],
// f̃ = λF_x + (1−λ)F_x′ and ũ = λU_x + (1−λ)U_x′ with F = Wᵀz + b and
// U = Mz + m_b. Ĝ_ab is the mean over S draws: draw s mixes the s-th pool
// sample of a with the s-th of b at λ_s = β_min + (1−β_min)(s+½)/S. With
// one draw (λ = β̄) on pools that hold the centroids, M = D̃ᵀZ and m_b = 0,
// it is Theorem 1.

// SampleSet is what the samples form reads besides D and the head: the
// head's inputs z(x) of the validation samples with their labels, and S
// training samples of each class (the draws).
type SampleSet struct {
	Val *mat.Dense // N×d, the head's inputs of the validation samples
	Y   []int      // their labels, in [0, K)
	// ValLogits is Val·W + b where the caller has it (N×K); nil: computed.
	ValLogits *mat.Dense
	Pool      *mat.Dense // (K·S)×d, class-major: rows k·S … k·S+S−1 are class k's
	S         int        // draws, and pool samples per class
}

// SampleOpts are the samples form's settings.
type SampleOpts struct {
	// BetaMin is β_min: λ ~ U[β_min, 1], stratified over the draws.
	BetaMin float64
}

// Estimate is the validation side of the samples form for one head: the
// softmax of every validation sample and C^soft, which D = ∂ψ/∂C^soft is
// taken at (Soft) before Gain.
type Estimate struct {
	s       *SampleSet
	W       *mat.Dense
	b       []float64
	k, d, n int
	p       *mat.Dense // N×K softmax of the validation samples
	soft    *mat.Dense

	guarded int // pairs and draws of the last Gain whose separable normaliser underflowed
}

// NewEstimate checks s against the head (W d×K, len(b) = K) and computes
// the validation samples' softmax. A shape or label out of range, or a
// non-finite input, is an error.
func NewEstimate(s *SampleSet, W *mat.Dense, b []float64) (*Estimate, error) {
	if s == nil || s.Val == nil || s.Pool == nil {
		return nil, fmt.Errorf("gain: the samples form needs validation and pool features")
	}
	d, k := W.Dims()
	n, vd := s.Val.Dims()
	if vd != d {
		return nil, fmt.Errorf("gain: validation features have %d columns, the head %d rows", vd, d)
	}
	if len(b) != k {
		return nil, fmt.Errorf("gain: %d biases for %d classes", len(b), k)
	}
	if len(s.Y) != n || n == 0 {
		return nil, fmt.Errorf("gain: %d labels for %d validation samples", len(s.Y), n)
	}
	for i, y := range s.Y {
		if y < 0 || y >= k {
			return nil, fmt.Errorf("gain: validation label %d of sample %d outside [0, %d)", y, i, k)
		}
	}
	if pr, pd := s.Pool.Dims(); s.S < 1 || pr != k*s.S || pd != d {
		return nil, fmt.Errorf("gain: pool is %d×%d, want %d·%d×%d", pr, pd, k, s.S, d)
	}
	if s.ValLogits != nil {
		if r, c := s.ValLogits.Dims(); r != n || c != k {
			return nil, fmt.Errorf("gain: validation logits are %d×%d, want %d×%d", r, c, n, k)
		}
	}
	for _, m := range []struct {
		name string
		m    *mat.Dense
	}{{"validation features", s.Val}, {"pool features", s.Pool}, {"W", W}} {
		if !matFinite(m.m) {
			return nil, fmt.Errorf("%w in %s", ErrNotFinite, m.name)
		}
	}
	if !slicesFinite(b) {
		return nil, fmt.Errorf("%w in b", ErrNotFinite)
	}
	e := &Estimate{s: s, W: W, b: b, k: k, d: d, n: n}
	if s.ValLogits != nil {
		if !matFinite(s.ValLogits) {
			return nil, fmt.Errorf("%w in validation logits", ErrNotFinite)
		}
		e.p = mat.DenseCopyOf(s.ValLogits)
	} else {
		e.p = logits(s.Val, W, b)
	}
	soft := mat.NewDense(k, k, nil)
	for i := range n {
		row := e.p.RawRowView(i)
		softmaxInPlace(row)
		dst := soft.RawRowView(s.Y[i])
		for j, v := range row {
			dst[j] += v
		}
	}
	soft.Scale(1/float64(n), soft)
	e.soft = soft
	return e, nil
}

// Soft is C^soft_ij = (1/N) Σ_{y(x)=i} p_j(x), the point D is taken at.
// Its rows sum to the validation set's class shares.
func (e *Estimate) Soft() *mat.Dense { return e.soft }

// Gain writes Ĝ (K×K) into dst, which must be empty or K×K, from
// D = ∂ψ/∂C^soft (K×K) taken at Soft. A β_min outside [0, 1] panics; a non-finite D or result is an error wrapping
// ErrNotFinite.
func (e *Estimate) Gain(dst *mat.Dense, D mat.Matrix, o SampleOpts) error {
	k, d := e.k, e.d
	if r, c := D.Dims(); r != k || c != k {
		panic(fmt.Sprintf("gain: D is %d×%d, want %d×%d", r, c, k, k))
	}
	if !matFinite(D) {
		return fmt.Errorf("%w in D", ErrNotFinite)
	}
	// g(x) for every validation sample, then M = gᵀ·Z_val/N and m_b.
	g := mat.NewDense(e.n, k, nil)
	mb := make([]float64, k)
	for i, y := range e.s.Y {
		p, gi := e.p.RawRowView(i), g.RawRowView(i)
		var dot float64
		for m, pm := range p {
			dot += pm * D.At(y, m)
		}
		for l, pl := range p {
			gi[l] = pl * (D.At(y, l) - dot)
			mb[l] += gi[l]
		}
	}
	M := mat.NewDense(k, d, nil)
	M.Mul(g.T(), e.s.Val)
	M.Scale(1/float64(e.n), M)
	for l := range mb {
		mb[l] /= float64(e.n)
	}
	F := logits(e.s.Pool, e.W, e.b)
	U := logits(e.s.Pool, M.T(), mb)
	return e.pairs(dst, F, U, o)
}

// pairs is the pair side of Gain: Ĝ_ab = mean over draws of
// ũ_a − softmax(f̃)·ũ, from the logits F and U = Mz + m_b of every pool
// sample. Draw s takes the same sample of each class at one λ_s, so
// as in Computer.Gain the exp separates over the two ends and the K²
// softmaxes of a draw are three K×K×K matrix products: S draws cost about
// S/2 times the centroid forms' six.
func (e *Estimate) pairs(dst *mat.Dense, F, U *mat.Dense, o SampleOpts) error {
	k, S := e.k, e.s.S
	if !(o.BetaMin >= 0 && o.BetaMin <= 1) {
		panic(fmt.Sprintf("gain: sample options %+v", o))
	}
	if dst.IsEmpty() {
		dst.ReuseAs(k, k)
	} else if r, c := dst.Dims(); r != k || c != k {
		panic(fmt.Sprintf("gain: dst is %d×%d, want %d×%d", r, c, k, k))
	}
	kk := k * k
	buf := make([]float64, 7*kk)
	// f and u: row c is the logits and U of draw s's sample of class c.
	f, u := buf[:kk], buf[kk:2*kk]
	e1, e2, t, n, sn := buf[2*kk:3*kk], buf[3*kk:4*kk], buf[4*kk:5*kk], buf[5*kk:6*kk], buf[6*kk:]
	gen := func(d []float64) blas64.General { return blas64.General{Rows: k, Cols: k, Stride: k, Data: d} }
	acc := make([]float64, kk)
	e.guarded = 0
	for s := range S {
		lam := drawLambda(o.BetaMin, s, S)
		cl := 1 - lam
		for c := range k {
			copy(f[c*k:(c+1)*k], F.RawRowView(c*S+s))
			copy(u[c*k:(c+1)*k], U.RawRowView(c*S+s))
		}
		// Each row shifted by its own max: every entry in [0, 1].
		for c := range k {
			r := f[c*k : (c+1)*k]
			m1, m2 := math.Inf(-1), math.Inf(-1)
			for _, v := range r {
				m1, m2 = math.Max(m1, lam*v), math.Max(m2, cl*v)
			}
			for l, v := range r {
				e1[c*k+l] = math.Exp(lam*v - m1)
				e2[c*k+l] = math.Exp(cl*v - m2)
			}
		}
		gemmABt(gen(n), gen(e1), gen(e2), false)
		for i, v := range u {
			t[i] = lam * v * e1[i]
		}
		gemmABt(gen(sn), gen(t), gen(e2), false)
		for i, v := range u {
			t[i] = cl * v * e2[i]
		}
		gemmABt(gen(sn), gen(e1), gen(t), true)
		for a := range k {
			for b := range k {
				var neg float64
				if nab := n[a*k+b]; nab >= underflowLimit {
					neg = sn[a*k+b] / nab
				} else {
					e.guarded++
					neg = directMix(f[a*k:(a+1)*k], f[b*k:(b+1)*k], u[a*k:(a+1)*k], u[b*k:(b+1)*k], lam)
				}
				acc[a*k+b] += lam*u[a*k+a] + cl*u[b*k+a] - neg
			}
		}
	}
	for a := range k {
		out := dst.RawRowView(a)
		for b := range k {
			v := acc[a*k+b] / float64(S)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("%w: G[%d,%d] = %v (inputs too large)", ErrNotFinite, a, b, v)
			}
			out[b] = v
		}
	}
	return nil
}

// directMix is softmax(λf1 + (1−λ)f2)·(λu1 + (1−λ)u2) with one shift, for
// the pairs whose separable normaliser underflowed.
func directMix(f1, f2, u1, u2 []float64, lam float64) float64 {
	cl := 1 - lam
	mx := math.Inf(-1)
	for l := range f1 {
		mx = math.Max(mx, lam*f1[l]+cl*f2[l])
	}
	var z, num float64
	for l := range f1 {
		w := math.Exp(lam*f1[l] + cl*f2[l] - mx)
		z += w
		num += w * (lam*u1[l] + cl*u2[l])
	}
	return num / z
}

// drawLambda is draw s's λ of S, stratified over [β_min, 1]: β_min +
// (1−β_min)(s+½)/S, so a single draw is at β̄.
func drawLambda(betaMin float64, s, S int) float64 {
	return betaMin + (1-betaMin)*(float64(s)+0.5)/float64(S)
}

// logits is X·A + 1·bᵀ (rows×K) for X rows×d and A d×K.
func logits(X *mat.Dense, A mat.Matrix, b []float64) *mat.Dense {
	r, _ := X.Dims()
	_, k := A.Dims()
	out := mat.NewDense(r, k, nil)
	out.Mul(X, A)
	for i := range r {
		row := out.RawRowView(i)
		for j, v := range b {
			row[j] += v
		}
	}
	return out
}

// softmaxInPlace replaces v by softmax(v), shifted by its max.
func softmaxInPlace(v []float64) {
	mx := math.Inf(-1)
	for _, x := range v {
		mx = math.Max(mx, x)
	}
	var s float64
	for i, x := range v {
		v[i] = math.Exp(x - mx)
		s += v[i]
	}
	for i := range v {
		v[i] /= s
	}
}

func slicesFinite(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

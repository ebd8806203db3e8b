package gain

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"selmix/core/metric"
)

// TestSamplesCentroidLimit: on pools that hold only the class centroids,
// with one draw (λ = β̄), M = DᵀZ and m_b = 0, the samples form's pair
// side is Theorem 1: Computer.Gain's paper form, to 1e-12.
func TestSamplesCentroidLimit(t *testing.T) {
	for _, sz := range []struct{ K, d int }{{3, 2}, {10, 16}, {40, 8}} {
		pr := randProblem(rand.New(rand.NewPCG(7, uint64(sz.K))), sz.K, sz.d, 3)
		const betaBar = 0.8
		var c Computer
		var want mat.Dense
		if err := c.Gain(&want, pr.D, pr.Z, pr.W, pr.b, betaBar, Paper); err != nil {
			t.Fatal(err)
		}
		set := &SampleSet{Val: pr.Z, Y: seq(sz.K), Pool: pr.Z, S: 1}
		e, err := NewEstimate(set, pr.W, pr.b)
		if err != nil {
			t.Fatal(err)
		}
		M := mat.NewDense(sz.K, sz.d, nil)
		M.Mul(pr.D.T(), pr.Z)
		F := logits(pr.Z, pr.W, pr.b)
		U := logits(pr.Z, M.T(), make([]float64, sz.K))
		var got mat.Dense
		if err := e.pairs(&got, F, U, SampleOpts{BetaMin: 2*betaBar - 1}); err != nil {
			t.Fatal(err)
		}
		scale := mat.Norm(&want, math.Inf(1))
		for i := range sz.K {
			for j := range sz.K {
				if d := math.Abs(got.At(i, j) - want.At(i, j)); d > 1e-12*max(1, scale) {
					t.Fatalf("K=%d: G[%d,%d] = %.17g, paper %.17g (|Δ| %.3g)", sz.K, i, j, got.At(i, j), want.At(i, j), d)
				}
			}
		}
	}
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// fdWorld is a small problem for the finite-difference oracle: validation
// samples of K classes in d dimensions, a head, and pools.
type fdWorld struct {
	K, d, m int
	val     *mat.Dense
	y       []int
	pool    *mat.Dense
	W       *mat.Dense
	b       []float64
}

func newFDWorld(rnd *rand.Rand, K, d, perClass, m int) fdWorld {
	w := fdWorld{K: K, d: d, m: m}
	mu := make([][]float64, K)
	for k := range mu {
		mu[k] = make([]float64, d)
		for j := range mu[k] {
			mu[k][j] = 1.5 * rnd.NormFloat64()
		}
	}
	sample := func(k int) []float64 {
		x := make([]float64, d)
		for j := range x {
			x[j] = mu[k][j] + rnd.NormFloat64()
		}
		return x
	}
	var rows []float64
	for k := range K {
		// A long tail: later classes have fewer validation samples.
		for range max(2, perClass>>k) {
			rows = append(rows, sample(k)...)
			w.y = append(w.y, k)
		}
	}
	w.val = mat.NewDense(len(w.y), d, rows)
	rows = nil
	for k := range K {
		for range m {
			rows = append(rows, sample(k)...)
		}
	}
	w.pool = mat.NewDense(K*m, d, rows)
	w.W = mat.NewDense(d, K, nil)
	for i := range d {
		for j := range K {
			w.W.Set(i, j, 0.7*rnd.NormFloat64())
		}
	}
	w.b = make([]float64, K)
	for j := range w.b {
		w.b[j] = 0.3 * rnd.NormFloat64()
	}
	return w
}

// softC is C^soft of the validation samples under the head θ = (W, b),
// written out loop by loop.
func (w fdWorld) softC(W []float64, b []float64) *mat.Dense {
	n, _ := w.val.Dims()
	C := mat.NewDense(w.K, w.K, nil)
	for i := range n {
		z := w.val.RawRowView(i)
		l := make([]float64, w.K)
		for j := range w.K {
			l[j] = b[j]
			for f := range w.d {
				l[j] += z[f] * W[f*w.K+j]
			}
		}
		mx := l[0]
		for _, v := range l {
			mx = math.Max(mx, v)
		}
		var s float64
		for j := range l {
			l[j] = math.Exp(l[j] - mx)
			s += l[j]
		}
		for j := range l {
			C.Set(w.y[i], j, C.At(w.y[i], j)+l[j]/s/float64(n))
		}
	}
	return C
}

// mixLoss is the mean cross-entropy, label a, of the pair's mixed draws
// under θ = (W, b).
func (w fdWorld) mixLoss(o SampleOpts, a, bc int, W, b []float64) float64 {
	var tot float64
	for s := range w.m {
		i, j, lam := s, s, drawLambda(o.BetaMin, s, w.m)
		x, x2 := w.pool.RawRowView(a*w.m+i), w.pool.RawRowView(bc*w.m+j)
		l := make([]float64, w.K)
		for k := range w.K {
			l[k] = b[k]
			for f := range w.d {
				l[k] += (lam*x[f] + (1-lam)*x2[f]) * W[f*w.K+k]
			}
		}
		mx := l[0]
		for _, v := range l {
			mx = math.Max(mx, v)
		}
		var s float64
		for _, v := range l {
			s += math.Exp(v - mx)
		}
		tot += mx + math.Log(s) - l[a]
	}
	return tot / float64(w.m)
}

// TestSamplesAgainstFiniteDifference: Ĝ_ab is the derivative of soft ψ
// (multipliers fixed at the hard confusion matrix's) along one SGD step on
// the pair's mixed draws. The oracle differentiates the cross-entropy of
// the draws and then ψ numerically, with neither g(x), M nor U.
func TestSamplesAgainstFiniteDifference(t *testing.T) {
	for _, tc := range []struct {
		K   int
		obj metric.Objective
	}{
		{3, metric.MinRecall}, {4, metric.MeanRecallCov}, {5, metric.HMean}, {6, metric.GMean}, {10, metric.MeanRecallCov},
	} {
		w := newFDWorld(rand.New(rand.NewPCG(3, uint64(tc.K))), tc.K, 3, 24, 5)
		o := SampleOpts{BetaMin: 0.6}
		W0 := append([]float64(nil), w.W.RawMatrix().Data...)
		b0 := append([]float64(nil), w.b...)

		// The hard confusion matrix fixes the multipliers.
		e, err := NewEstimate(&SampleSet{Val: w.val, Y: w.y, Pool: w.pool, S: w.m}, w.W, w.b)
		if err != nil {
			t.Fatal(err)
		}
		hard := mat.NewDense(tc.K, tc.K, nil)
		n := len(w.y)
		for i := range n {
			k := argmaxOf(e.p.RawRowView(i))
			hard.Set(w.y[i], k, hard.At(w.y[i], k)+1/float64(n))
		}
		p := metric.Params{Alpha: 0.95}
		ev, err := metric.Evaluate(tc.obj, hard, nil, p)
		if err != nil {
			t.Fatal(err)
		}
		var D mat.Dense
		if err := metric.Linearize(&D, tc.obj, e.Soft(), nil, ev.Lambda, p); err != nil {
			t.Fatal(err)
		}
		var G mat.Dense
		if err := e.Gain(&G, &D, o); err != nil {
			t.Fatal(err)
		}
		psi := func(W, b []float64) float64 {
			v, err := metric.Psi(tc.obj, w.softC(W, b), nil, ev.Lambda, p)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		for a := range tc.K {
			for bc := range tc.K {
				// −∇ of the draws' loss, by central differences.
				params := append(append([]float64(nil), W0...), b0...)
				grad := make([]float64, len(params))
				const h = 1e-5
				for q := range params {
					up := append([]float64(nil), params...)
					dn := append([]float64(nil), params...)
					up[q] += h
					dn[q] -= h
					lu := w.mixLoss(o, a, bc, up[:len(W0)], up[len(W0):])
					ld := w.mixLoss(o, a, bc, dn[:len(W0)], dn[len(W0):])
					grad[q] = -(lu - ld) / (2 * h)
				}
				at := func(eta float64) float64 {
					th := make([]float64, len(params))
					for q := range th {
						th[q] = params[q] + eta*grad[q]
					}
					return psi(th[:len(W0)], th[len(W0):])
				}
				const eta = 1e-4
				fd := (at(eta) - at(-eta)) / (2 * eta)
				if got := G.At(a, bc); math.Abs(got-fd) > 1e-6*max(1, math.Abs(fd)) {
					t.Errorf("%s K=%d: G[%d,%d] = %.10g, finite difference %.10g", tc.obj, tc.K, a, bc, got, fd)
				}
			}
		}
	}
}

func argmaxOf(v []float64) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// confidentWorld is a K-class problem whose head predicts most samples
// confidently (a gap of about 10 nats), as a pre-trained network does:
// the regime where the softmax's mass sits on a few classes.
func confidentWorld(rnd *rand.Rand, K, d, nPer, m int) fdWorld {
	w := fdWorld{K: K, d: d, m: m}
	mu := mat.NewDense(K, d, nil)
	for k := range K {
		for j := range d {
			mu.Set(k, j, rnd.NormFloat64())
		}
	}
	gen := func(per int) (*mat.Dense, []int) {
		x := mat.NewDense(K*per, d, nil)
		y := make([]int, K*per)
		for k := range K {
			for r := range per {
				row := x.RawRowView(k*per + r)
				for j := range row {
					row[j] = mu.At(k, j) + 0.5*rnd.NormFloat64()
				}
				y[k*per+r] = k
			}
		}
		return x, y
	}
	w.val, w.y = gen(nPer)
	w.pool, _ = gen(m)
	w.W = mat.NewDense(d, K, nil)
	w.W.Scale(10/float64(d), mu.T())
	w.b = make([]float64, K)
	return w
}

// TestSamplesUnderflow: where a draw's logits are so far apart that the
// separable normaliser underflows, the pair is computed directly, and the
// result is the one a per-pair softmax gives.
func TestSamplesUnderflow(t *testing.T) {
	const K = 6
	w := confidentWorld(rand.New(rand.NewPCG(5, 6)), K, 4, 3, 3)
	o := SampleOpts{BetaMin: 0.6}
	D := zeroRowSumD(rand.New(rand.NewPCG(1, 1)), K)
	for _, scale := range []float64{1, 400} {
		W := mat.NewDense(4, K, nil)
		W.Scale(scale, w.W)
		e, err := NewEstimate(&SampleSet{Val: w.val, Y: w.y, Pool: w.pool, S: w.m}, W, w.b)
		if err != nil {
			t.Fatal(err)
		}
		var G mat.Dense
		if err := e.Gain(&G, D, o); err != nil {
			t.Fatal(err)
		}
		if scale > 1 && e.guarded == 0 {
			t.Fatalf("scale %v: no pair needed the direct softmax", scale)
		}
		ref := newPairRef(e, D, o)
		for a := range K {
			for b := range K {
				want := ref.at(a, b)
				if d := math.Abs(G.At(a, b) - want); d > 1e-9*max(1, math.Abs(want)) {
					t.Fatalf("scale %v: G[%d,%d] = %.12g, per-pair softmax %.12g", scale, a, b, G.At(a, b), want)
				}
			}
		}
	}
}

// pairRef computes Ĝ_ab pair by pair, each draw with its own softmax
// (directMix), from M and m_b built row by row: the reference for the
// separable closed form.
type pairRef struct {
	e    *Estimate
	F, U *mat.Dense
	o    SampleOpts
}

func newPairRef(e *Estimate, D *mat.Dense, o SampleOpts) pairRef {
	K, d, n := e.k, e.d, e.n
	M := mat.NewDense(K, d, nil)
	mb := make([]float64, K)
	for i, y := range e.s.Y {
		p, z := e.p.RawRowView(i), e.s.Val.RawRowView(i)
		var dot float64
		for m := range K {
			dot += p[m] * D.At(y, m)
		}
		for l := range K {
			g := p[l] * (D.At(y, l) - dot) / float64(n)
			mb[l] += g
			row := M.RawRowView(l)
			for f, zf := range z {
				row[f] += g * zf
			}
		}
	}
	return pairRef{e: e, F: logits(e.s.Pool, e.W, e.b), U: logits(e.s.Pool, M.T(), mb), o: o}
}

func (r pairRef) at(a, b int) float64 {
	S := r.e.s.S
	var sum float64
	for s := range S {
		x, y, lam := a*S+s, b*S+s, drawLambda(r.o.BetaMin, s, S)
		sum += lam*r.U.At(x, a) + (1-lam)*r.U.At(y, a) - directMix(r.F.RawRowView(x), r.F.RawRowView(y), r.U.RawRowView(x), r.U.RawRowView(y), lam)
	}
	return sum / float64(S)
}

// TestSamplesK1000: at K = 1000 the closed form agrees with the pair by
// pair reference on pairs spread over the matrix.
func TestSamplesK1000(t *testing.T) {
	const K = 1000
	w := confidentWorld(rand.New(rand.NewPCG(8, 8)), K, 8, 2, 2)
	e, err := NewEstimate(&SampleSet{Val: w.val, Y: w.y, Pool: w.pool, S: w.m}, w.W, w.b)
	if err != nil {
		t.Fatal(err)
	}
	D := zeroRowSumD(rand.New(rand.NewPCG(2, 9)), K)
	o := SampleOpts{BetaMin: 0.6}
	var G mat.Dense
	if err := e.Gain(&G, D, o); err != nil {
		t.Fatal(err)
	}
	ref := newPairRef(e, D, o)
	rnd := rand.New(rand.NewPCG(4, 4))
	scale := mat.Norm(&G, math.Inf(1))
	for range 200 {
		a, b := rnd.IntN(K), rnd.IntN(K)
		if want := ref.at(a, b); math.Abs(G.At(a, b)-want) > 1e-9*max(1, scale) {
			t.Fatalf("G[%d,%d] = %.12g, pair by pair %.12g", a, b, G.At(a, b), want)
		}
	}
}

// TestSamplesDeterministic: the result does not depend on how many
// goroutines share the rows.
func TestSamplesDeterministic(t *testing.T) {
	w := confidentWorld(rand.New(rand.NewPCG(9, 9)), 30, 8, 3, 4)
	e, err := NewEstimate(&SampleSet{Val: w.val, Y: w.y, Pool: w.pool, S: w.m}, w.W, w.b)
	if err != nil {
		t.Fatal(err)
	}
	D := mat.NewDense(30, 30, nil)
	for i := range 30 {
		D.Set(i, i, 1)
	}
	o := SampleOpts{BetaMin: 0.6}
	var a, b mat.Dense
	if err := e.Gain(&a, D, o); err != nil {
		t.Fatal(err)
	}
	old := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(old)
	if err := e.Gain(&b, D, o); err != nil {
		t.Fatal(err)
	}
	if !mat.Equal(&a, &b) {
		t.Fatal("Ĝ differs between GOMAXPROCS settings")
	}
}

// TestSamplesBadInput: shapes and labels that do not fit are errors that
// say what is wrong.
func TestSamplesBadInput(t *testing.T) {
	w := confidentWorld(rand.New(rand.NewPCG(2, 2)), 4, 3, 2, 2)
	for _, tc := range []struct {
		name string
		set  *SampleSet
		want string
	}{
		{"nil", nil, "needs validation and pool"},
		{"labels", &SampleSet{Val: w.val, Y: w.y[:3], Pool: w.pool, S: 2}, "labels"},
		{"label range", &SampleSet{Val: w.val, Y: append([]int{7}, w.y[1:]...), Pool: w.pool, S: 2}, "outside [0, 4)"},
		{"pool", &SampleSet{Val: w.val, Y: w.y, Pool: w.pool, S: 3}, "pool is"},
	} {
		_, err := NewEstimate(tc.set, w.W, w.b)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// BenchmarkGainSamples is the samples form at the paper's largest scale
// beside BenchmarkGainPaperK1000's paper form on the same shapes: K =
// 1000, d = 512, 20 validation samples per class, S = 8 draws per pair
// (finetune.sample_draws' default) and S = 4.
func BenchmarkGainSamples(b *testing.B) {
	const K, d = 1000, 512
	D := zeroRowSumD(rand.New(rand.NewPCG(3, 4)), K)
	o := SampleOpts{BetaMin: 0.6}
	for _, S := range []int{8, 4} {
		w := confidentWorld(rand.New(rand.NewPCG(1, 2)), K, d, 20, S)
		b.Run(fmt.Sprintf("K=1000/d=512/S=%d", S), func(b *testing.B) {
			var G mat.Dense
			for b.Loop() {
				e, err := NewEstimate(&SampleSet{Val: w.val, Y: w.y, Pool: w.pool, S: w.m}, w.W, w.b)
				if err != nil {
					b.Fatal(err)
				}
				if err := e.Gain(&G, D, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGainPaperK1000 is the paper form on BenchmarkGainSamples's
// problem, for the ratio between them.
func BenchmarkGainPaperK1000(b *testing.B) {
	const K, d = 1000, 512
	w := confidentWorld(rand.New(rand.NewPCG(1, 2)), K, d, 1, 1)
	D := zeroRowSumD(rand.New(rand.NewPCG(3, 4)), K)
	var c Computer
	var G mat.Dense
	for b.Loop() {
		if err := c.Gain(&G, D, w.pool, w.W, w.b, 0.8, Paper); err != nil {
			b.Fatal(err)
		}
	}
}

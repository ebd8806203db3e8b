package gain

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// gainTol is the agreement required between the fast path and naiveGain,
// relative to max|G|. Both are exact formulas evaluated in float64 with
// O(K·d)-term sums, so they agree to ~1e-14 on the test sizes; 1e-10 leaves
// room for ill-conditioned random draws.
const gainTol = 1e-10

type problem struct {
	D, Z, W *mat.Dense
	b       []float64
}

// randProblem draws Z ~ N(0,1), W ~ N(0, scale²/d) (so logits are
// O(scale)), b ~ N(0,1) and a non-symmetric D ~ N(0,1).
func randProblem(rnd *rand.Rand, K, d int, scale float64) problem {
	randn := func(r, c int, sd float64) *mat.Dense {
		m := mat.NewDense(r, c, nil)
		for i := range r {
			for j := range c {
				m.Set(i, j, sd*rnd.NormFloat64())
			}
		}
		return m
	}
	b := make([]float64, K)
	for i := range b {
		b[i] = rnd.NormFloat64()
	}
	return problem{
		D: randn(K, K, 1),
		Z: randn(K, d, 1),
		W: randn(d, K, scale/math.Sqrt(float64(d))),
		b: b,
	}
}

// zeroRowSumD builds D the way core/metric does for ψ = f(rec):
// D_kl = f_k·rec_k·(δ_kl − C_kl/π_k) from a random joint confusion matrix C
// and random positive f_k, so every row of D sums to zero.
func zeroRowSumD(rnd *rand.Rand, K int) *mat.Dense {
	C := mat.NewDense(K, K, nil)
	var tot float64
	for i := range K {
		for j := range K {
			v := rnd.Float64()
			if i == j {
				v += 2 // mostly-correct classifier
			}
			C.Set(i, j, v)
			tot += v
		}
	}
	C.Scale(1/tot, C)
	D := mat.NewDense(K, K, nil)
	for k := range K {
		pi := mat.Sum(C.RowView(k))
		rec := C.At(k, k) / pi
		f := 0.1 + rnd.Float64()
		for l := range K {
			var delta float64
			if k == l {
				delta = 1
			}
			D.Set(k, l, f*rec*(delta-C.At(k, l)/pi))
		}
	}
	return D
}

// assertClose checks got against want to tol relative to max|want|.
func assertClose(t *testing.T, got, want mat.Matrix, tol float64) {
	t.Helper()
	scale := mat.Norm(want, math.Inf(1)) // max row sum ≥ max|entry|
	r, c := want.Dims()
	maxAbs := 0.0
	for i := range r {
		for j := range c {
			maxAbs = math.Max(maxAbs, math.Abs(want.At(i, j)))
		}
	}
	if maxAbs == 0 {
		t.Fatalf("oracle is all zeros (row-sum norm %v): test is vacuous", scale)
	}
	for i := range r {
		for j := range c {
			g, w := got.At(i, j), want.At(i, j)
			if diff := math.Abs(g - w); !(diff <= tol*maxAbs) {
				t.Fatalf("G[%d,%d] = %.17g, want %.17g (|diff|/max|G| = %.3g > %g)",
					i, j, g, w, diff/maxAbs, tol)
			}
		}
	}
}

func TestGainMatchesNaive(t *testing.T) { withKernels(t, testGainMatchesNaive) }

func testGainMatchesNaive(t *testing.T) {
	forms := []Form{Paper, Official}
	for _, K := range []int{2, 3, 7, 10, 25} {
		for _, d := range []int{1, 5, 64} {
			seeds := 3
			if K*K*K*K*d > 1e6 {
				seeds = 2 // keep the O(K⁴d) oracle fast under -race
			}
			for seed := range seeds {
				for _, form := range forms {
					name := fmt.Sprintf("K=%d/d=%d/seed=%d/%v", K, d, seed, form)
					t.Run(name, func(t *testing.T) {
						rnd := rand.New(rand.NewPCG(uint64(K*1000+d), uint64(seed)))
						// Seeds 1 and 2 use larger logits so the softmaxes are
						// peaked and E1, E2 span many orders of magnitude.
						scale := []float64{1, 5, 20}[seed]
						pr := randProblem(rnd, K, d, scale)
						betaBar := []float64{0.8, 0.5 + 0.5*rnd.Float64(), 1}[seed]
						var c Computer
						var got mat.Dense
						if err := c.Gain(&got, pr.D, pr.Z, pr.W, pr.b, betaBar, form); err != nil {
							t.Fatal(err)
						}
						want := naiveGain(pr.D, pr.Z, pr.W, pr.b, betaBar, form)
						assertClose(t, &got, want, gainTol)
						if c.guarded != 0 {
							t.Errorf("guard path used for %d pairs on benign input", c.guarded)
						}
					})
				}
			}
		}
	}
}

func TestGainZeroRowSumD(t *testing.T) {
	for _, tc := range []struct {
		K, d int
		form Form
	}{
		{3, 5, Paper}, {10, 64, Paper}, {25, 5, Paper},
		{3, 5, Official}, {10, 64, Official}, {25, 5, Official},
	} {
		t.Run(fmt.Sprintf("K=%d/d=%d/%v", tc.K, tc.d, tc.form), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(7, uint64(tc.K)))
			pr := randProblem(rnd, tc.K, tc.d, 3)
			pr.D = zeroRowSumD(rnd, tc.K)
			for k := range tc.K {
				if s := mat.Sum(pr.D.RowView(k)); math.Abs(s) > 1e-15 {
					t.Fatalf("row %d of D sums to %g, want 0", k, s)
				}
			}
			var c Computer
			var got mat.Dense
			if err := c.Gain(&got, pr.D, pr.Z, pr.W, pr.b, BetaBar(0.6), tc.form); err != nil {
				t.Fatal(err)
			}
			assertClose(t, &got, naiveGain(pr.D, pr.Z, pr.W, pr.b, BetaBar(0.6), tc.form), gainTol)
		})
	}
}

// TestGainUnderflowGuard crafts logits whose two separable factors peak at
// different classes by ~2000 nats, so E1·E2ᵀ underflows to 0 for some pairs
// although their true softmax is well defined.
func TestGainUnderflowGuard(t *testing.T) { withKernels(t, testGainUnderflowGuard) }

func testGainUnderflowGuard(t *testing.T) {
	const K = 5
	rnd := rand.New(rand.NewPCG(11, 12))
	// With Z = I (d = K) the logits matrix A = Z W is W itself.
	Z := mat.NewDense(K, K, nil)
	for i := range K {
		Z.Set(i, i, 1)
	}
	W := mat.NewDense(K, K, nil)
	for i := range K {
		for j := range K {
			W.Set(i, j, rnd.NormFloat64())
		}
	}
	const betaBar = 0.8
	// Rows 0 and 1: β̄·A_i0 ≈ 2000 dominates E1 at class 0; b_1 = 2000
	// dominates E2 at class 1. So for i ∈ {0,1}, N_ij ≈ e^{-2000} → 0, yet
	// the mixed logits of classes 0 and 1 are within O(1) of each other.
	W.Set(0, 0, 2000/betaBar)
	W.Set(1, 0, 2000/betaBar+1)
	b := []float64{0, 2000, 0.5, -0.5, 0}
	D := mat.NewDense(K, K, nil)
	for i := range K {
		for j := range K {
			D.Set(i, j, rnd.NormFloat64())
		}
	}
	for _, form := range []Form{Paper, Official} {
		t.Run(form.String(), func(t *testing.T) {
			var c Computer
			var got mat.Dense
			if err := c.Gain(&got, D, Z, W, b, betaBar, form); err != nil {
				t.Fatal(err)
			}
			if c.guarded == 0 {
				t.Fatal("guard path was not exercised: the crafted input is too mild")
			}
			if c.guarded == K*K {
				t.Fatal("every pair was guarded: the separable path is not exercised")
			}
			// Guarded pair (0, 2) must have a genuinely mixed softmax, or the
			// test could pass with a one-hot p computed any old way.
			l0 := betaBar*W.At(0, 0) + (1-betaBar)*W.At(2, 0) + b[0]
			l1 := betaBar*W.At(0, 1) + (1-betaBar)*W.At(2, 1) + b[1]
			if math.Abs(l0-l1) > 20 {
				t.Fatalf("pair (0,2) logits %v, %v: softmax is one-hot", l0, l1)
			}
			assertClose(t, &got, naiveGain(D, Z, W, b, betaBar, form), gainTol)
		})
	}
}

func TestGainNonRawInputs(t *testing.T) {
	// Transposed views are not RawMatrixers: the At-based paths must agree.
	rnd := rand.New(rand.NewPCG(3, 4))
	pr := randProblem(rnd, 6, 4, 2)
	var c Computer
	var want, got mat.Dense
	if err := c.Gain(&want, pr.D, pr.Z, pr.W, pr.b, 0.8, Paper); err != nil {
		t.Fatal(err)
	}
	Dt := mat.DenseCopyOf(pr.D.T())
	Zt := mat.DenseCopyOf(pr.Z.T())
	Wt := mat.DenseCopyOf(pr.W.T())
	if err := c.Gain(&got, Dt.T(), Zt.T(), Wt.T(), pr.b, 0.8, Paper); err != nil {
		t.Fatal(err)
	}
	assertClose(t, &got, &want, 1e-13)
}

func TestGainAliasDst(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 6))
	pr := randProblem(rnd, 7, 3, 2)
	want := naiveGain(pr.D, pr.Z, pr.W, pr.b, 0.8, Paper)
	var c Computer
	if err := c.Gain(pr.D, pr.D, pr.Z, pr.W, pr.b, 0.8, Paper); err != nil {
		t.Fatal(err)
	}
	assertClose(t, pr.D, want, gainTol)
}

func TestComputerReuse(t *testing.T) {
	// Shrinking and growing K must not leak stale workspace into results.
	var shared Computer
	for step, K := range []int{10, 3, 25, 7, 25, 1} {
		rnd := rand.New(rand.NewPCG(uint64(step), 99))
		d := 1 + rnd.IntN(20)
		pr := randProblem(rnd, K, d, 4)
		for _, form := range []Form{Paper, Official} {
			var got, want mat.Dense
			if err := shared.Gain(&got, pr.D, pr.Z, pr.W, pr.b, 0.8, form); err != nil {
				t.Fatal(err)
			}
			var fresh Computer
			if err := fresh.Gain(&want, pr.D, pr.Z, pr.W, pr.b, 0.8, form); err != nil {
				t.Fatal(err)
			}
			if !mat.Equal(&got, &want) {
				t.Fatalf("step %d (K=%d, %v): reused Computer differs from a fresh one", step, K, form)
			}
		}
	}
}

func TestGainK1(t *testing.T) {
	// One class: p = (1), so e_i − p = 0 and the paper gain is exactly 0;
	// the official gain is R_00 − R_00 = 0 as well.
	Z := mat.NewDense(1, 3, []float64{1, 2, 3})
	W := mat.NewDense(3, 1, []float64{0.5, -1, 2})
	D := mat.NewDense(1, 1, []float64{4})
	for _, form := range []Form{Paper, Official} {
		var c Computer
		var G mat.Dense
		if err := c.Gain(&G, D, Z, W, []float64{0.3}, 0.8, form); err != nil {
			t.Fatal(err)
		}
		if g := G.At(0, 0); g != 0 {
			t.Errorf("%v: G = %v, want 0", form, g)
		}
	}
}

func TestGainErrors(t *testing.T) {
	base := func() problem {
		return randProblem(rand.New(rand.NewPCG(1, 1)), 4, 3, 1)
	}
	for _, tc := range []struct {
		name    string
		mutate  func(*problem)
		betaBar float64
	}{
		{"NaN in D", func(p *problem) { p.D.Set(1, 2, math.NaN()) }, 0.8},
		{"Inf in Z", func(p *problem) { p.Z.Set(3, 0, math.Inf(1)) }, 0.8},
		{"-Inf in W", func(p *problem) { p.W.Set(2, 3, math.Inf(-1)) }, 0.8},
		{"NaN in b", func(p *problem) { p.b[0] = math.NaN() }, 0.8},
		{"NaN betaBar", func(*problem) {}, math.NaN()},
		{"overflow in Z Zᵀ", func(p *problem) { p.Z.Set(0, 0, 1e200) }, 0.8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr := base()
			tc.mutate(&pr)
			var c Computer
			var G mat.Dense
			err := c.Gain(&G, pr.D, pr.Z, pr.W, pr.b, tc.betaBar, Paper)
			if !errors.Is(err, ErrNotFinite) {
				t.Fatalf("err = %v, want ErrNotFinite", err)
			}
		})
	}
}

func TestGainPanics(t *testing.T) {
	pr := randProblem(rand.New(rand.NewPCG(1, 2)), 4, 3, 1)
	for _, tc := range []struct {
		name string
		call func(c *Computer)
	}{
		{"D wrong shape", func(c *Computer) {
			c.Gain(&mat.Dense{}, mat.NewDense(4, 3, nil), pr.Z, pr.W, pr.b, 0.8, Paper)
		}},
		{"W wrong shape", func(c *Computer) {
			c.Gain(&mat.Dense{}, pr.D, pr.Z, mat.NewDense(4, 4, nil), pr.b, 0.8, Paper)
		}},
		{"b wrong length", func(c *Computer) {
			c.Gain(&mat.Dense{}, pr.D, pr.Z, pr.W, pr.b[:3], 0.8, Paper)
		}},
		{"dst wrong shape", func(c *Computer) {
			c.Gain(mat.NewDense(3, 4, nil), pr.D, pr.Z, pr.W, pr.b, 0.8, Paper)
		}},
		{"betaBar above 1", func(c *Computer) {
			c.Gain(&mat.Dense{}, pr.D, pr.Z, pr.W, pr.b, 1.5, Paper)
		}},
		{"unknown form", func(c *Computer) {
			c.Gain(&mat.Dense{}, pr.D, pr.Z, pr.W, pr.b, 0.8, Form(9))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			var c Computer
			tc.call(&c)
		})
	}
}

// parseCase is a parser's input and what it must give; a refused input
// gives the zero value.
type parseCase[T comparable] struct {
	in      string
	want    T
	wantErr bool
}

func checkParse[T comparable](t *testing.T, name string, parse func(string) (T, error), cases []parseCase[T]) {
	t.Helper()
	for _, tc := range cases {
		got, err := parse(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%s(%q) = %v, %v; want %v, err=%v", name, tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestParseForm(t *testing.T) {
	checkParse(t, "ParseForm", ParseForm, []parseCase[Form]{
		{"paper", Paper, false},
		{"official", Official, false},
		{"Official", Official, false},
		{" paper ", Paper, false},
		{"", 0, true},
		{"authors", 0, true},
		{"paper,official", 0, true},
	})
	for _, f := range []Form{Paper, Official} {
		if got, err := ParseForm(f.String()); err != nil || got != f {
			t.Errorf("ParseForm(%q) = %v, %v; want round trip", f.String(), got, err)
		}
	}
	if got, want := Form(7).String(), "Form(7)"; got != want {
		t.Errorf("Form(7).String() = %q, want %q", got, want)
	}
}

func TestParsePolicy(t *testing.T) {
	checkParse(t, "ParsePolicy", ParsePolicy, []parseCase[Policy]{
		{"selmix", SelMix, false},
		{"uniform", Uniform, false},
		{"greedy", Greedy, false},
		{"none", None, false},
		{"csst", CSST, false},
		{"MiSLAS2", MiSLAS2, false},
		{"SelMix", SelMix, false},
		{"", "", true},
		{"mixup", "", true},
		{"random", "", true},
	})
}

func TestBetaBar(t *testing.T) {
	for _, tc := range []struct{ in, want float64 }{
		{0.6, 0.8}, // the paper's default
		{0, 0.5},
		{1, 1},
	} {
		if got := BetaBar(tc.in); math.Abs(got-tc.want) > 1e-15 {
			t.Errorf("BetaBar(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	for _, bad := range []float64{-0.1, 1.1, math.NaN()} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("BetaBar(%v) did not panic", bad)
				}
			}()
			BetaBar(bad)
		}()
	}
}

// A typo of a policy is named with the policy it is near.
func TestParsePolicySuggests(t *testing.T) {
	_, err := ParsePolicy("selmux")
	if want := `gain: unknown policy "selmux" (did you mean selmix?) (want `; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("ParsePolicy(selmux) = %v, want it to contain %q", err, want)
	}
	if _, err := ParsePolicy("SelMix"); err != nil {
		t.Errorf("ParsePolicy(SelMix) = %v", err)
	}
}

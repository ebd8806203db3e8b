package metric

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// psiFixedPrior is ψ at C with entry (i, j) moved by h while the prior stays
// what it was at C (the linearisation's convention): the recalls divide by
// the old π, the coverages are summed from the moved C.
func psiFixedPrior(t *testing.T, obj Objective, C *mat.Dense, i, j int, h float64, tail []bool, lambda []float64) float64 {
	t.Helper()
	st, err := load(C, nil)
	if err != nil {
		t.Fatal(err)
	}
	K := st.k
	st.c[i*K+j] += h
	for k := range st.cov {
		st.cov[k] = 0
	}
	for a := 0; a < K; a++ {
		for b := 0; b < K; b++ {
			st.cov[b] += st.c[a*K+b]
		}
		st.rec[a] = st.c[a*K+a] / st.prior[a]
	}
	tm, err := st.terms(obj, tail, lambda, Params{})
	if err != nil {
		t.Fatal(err)
	}
	return tm.psi
}

// TestLinearizeFiniteDifference checks L = ∂ψ/∂C (prior and λ fixed)
// against central differences for every objective on the FD cases, with the
// multipliers of Multipliers and random ones. Step and tolerance as in
// TestGradFiniteDifference, but the step is relative to the row's prior:
// the G-mean and H-mean curve like 1/π_i² in C_ii, and a rare class has
// π_i ≈ 0.01, so a fixed step would be all truncation error there.
func TestLinearizeFiniteDifference(t *testing.T) {
	const hr, tol = 1e-5, 1e-8
	rnd := rand.New(rand.NewPCG(5, 6))
	for _, tc := range fdCases() {
		K, _ := tc.C.Dims()
		r, err := NewReport(tc.C, tc.tail)
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range Objectives() {
			lm := Multipliers(obj, r, tc.tail, Params{})
			lr := make([]float64, len(lm))
			for i := range lr {
				lr[i] = 5 * rnd.Float64()
			}
			for li, lambda := range [][]float64{lm, lr} {
				name := fmt.Sprintf("%s/%s/λ#%d", tc.name, obj, li)
				got := mat.NewDense(K, K, nil)
				if err := Linearize(got, obj, tc.C, tc.tail, lambda, Params{}); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				want := mat.NewDense(K, K, nil)
				for i := 0; i < K; i++ {
					h := hr * r.Prior[i]
					for j := 0; j < K; j++ {
						fp := psiFixedPrior(t, obj, tc.C, i, j, h, tc.tail, lambda)
						fm := psiFixedPrior(t, obj, tc.C, i, j, -h, tc.tail, lambda)
						want.Set(i, j, (fp-fm)/(2*h))
					}
				}
				scale := math.Max(1, mat.Norm(want, math.Inf(1)))
				var diff mat.Dense
				diff.Sub(got, want)
				if e := mat.Norm(&diff, math.Inf(1)) / scale; !(e <= tol) {
					t.Errorf("%s: |L − L_fd| = %.3g > %g\nL    = %.6g\nL_fd = %.6g", name, e, tol,
						mat.Formatted(got, mat.Prefix("       ")), mat.Formatted(want, mat.Prefix("       ")))
				}
			}
		}
	}
}

func TestLinearizeHand(t *testing.T) {
	// c2: π = (0.5, 0.5), rec = (0.8, 0.6), cov = (0.6, 0.4); defaults for K=2.
	e8 := math.Exp(8)
	l0, l1 := 1/(1+e8), e8/(1+e8) // min-recall λ (TestMultipliersHand)
	Lm := 100 * (1 - math.Exp(-7.5))
	s := 1 / (Lm + 1)
	gm := math.Sqrt(0.8 * 0.6)
	for _, tc := range []struct {
		obj  Objective
		want []float64
	}{
		// L = diag(1/(K·π_i)) = I.
		{MeanRecall, []float64{1, 0, 0, 1}},
		// L = diag(λ_i/π_i).
		{MinRecall, []float64{2 * l0, 0, 0, 2 * l1}},
		// λ = (0, Lm): L_ij = s·(δ_ij/(K·π_i) + λ_j).
		{MeanRecallCov, []float64{s, s * Lm, 0, s * (1 + Lm)}},
		// ∂GM/∂rec_i = GM/(K·rec_i), over π_i = 0.5: GM/rec_i.
		{GMean, []float64{gm / 0.8, 0, 0, gm / 0.6}},
	} {
		ev, err := Evaluate(tc.obj, dense(2, c2), nil, Params{})
		if err != nil {
			t.Fatal(err)
		}
		var got mat.Dense
		if err := Linearize(&got, tc.obj, dense(2, c2), nil, ev.Lambda, Params{}); err != nil {
			t.Fatal(err)
		}
		if want := mat.NewDense(2, 2, tc.want); !mat.EqualApprox(&got, want, 1e-14) {
			t.Errorf("%s: L = %v, want %v", tc.obj, mat.Formatted(&got), mat.Formatted(want))
		}
	}
}

// TestLinearFlag checks the specs' Linear flag against what it claims: for
// a linear objective ψ(C') − ψ(C) = Σ L_ij (C' − C)_ij exactly for any C'
// with the same prior (λ fixed); for the others the first-order prediction
// misses by far more than rounding (~1e-15 here; the second-order term of
// the nonlinear ones is ≥ 3e-6 on this pair).
func TestLinearFlag(t *testing.T) {
	C := dense(3, c3)
	// Same rows sums as c3, a different split of each row.
	C2 := dense(3, []float64{
		0.20, 0.25, 0.05,
		0.05, 0.10, 0.15,
		0.08, 0.02, 0.10,
	})
	for _, s := range Specs() {
		ev, err := Evaluate(s.Name, C, nil, Params{})
		if err != nil {
			t.Fatal(err)
		}
		var L mat.Dense
		if err := Linearize(&L, s.Name, C, nil, ev.Lambda, Params{}); err != nil {
			t.Fatal(err)
		}
		p2, err := Psi(s.Name, C2, nil, ev.Lambda, Params{})
		if err != nil {
			t.Fatal(err)
		}
		var d mat.Dense
		d.Sub(C2, C)
		d.MulElem(&d, &L)
		miss := math.Abs(p2 - ev.Psi - mat.Sum(&d))
		if s.Linear() && miss > 1e-12 {
			t.Errorf("%s is marked linear, but ψ moves %.3g away from its linearisation", s.Name, miss)
		}
		if !s.Linear() && miss < 1e-9 {
			t.Errorf("%s is marked nonlinear, but its linearisation is exact to %.3g", s.Name, miss)
		}
	}
}

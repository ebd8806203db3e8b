package gain

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func randGain(rnd *rand.Rand, K int, scale float64) *mat.Dense {
	G := mat.NewDense(K, K, nil)
	for i := range K {
		for j := range K {
			G.Set(i, j, scale*rnd.NormFloat64())
		}
	}
	return G
}

// checkProb asserts P is finite, non-negative and sums to 1.
func checkProb(t *testing.T, P mat.Matrix) {
	t.Helper()
	r, c := P.Dims()
	var sum float64
	for i := range r {
		for j := range c {
			v := P.At(i, j)
			if !(v >= 0) || math.IsInf(v, 0) {
				t.Fatalf("P[%d,%d] = %v, want finite and ≥ 0", i, j, v)
			}
			sum += v
		}
	}
	if math.Abs(sum-1) > 1e-12 {
		t.Fatalf("P sums to %.17g, want 1", sum)
	}
}

// TestDistributionSelMixOracle compares against the definition evaluated
// without any shift (safe here because s·|G| is small): exp(s·G) over the
// positive entries divided by its sum.
func TestDistributionSelMixOracle(t *testing.T) {
	for _, K := range []int{1, 2, 5, 20} {
		for _, s := range []float64{0.1, 1, 10} {
			t.Run(fmt.Sprintf("K=%d/s=%v", K, s), func(t *testing.T) {
				rnd := rand.New(rand.NewPCG(uint64(K), 1))
				G := randGain(rnd, K, 1)
				G.Set(0, 0, 0.5) // at least one positive gain
				if K > 1 {
					G.Set(K-1, 0, 0) // an exact zero must be masked too
				}
				var P mat.Dense
				Distribution(&P, G, s, SelMix)
				checkProb(t, &P)
				var z float64
				for i := range K {
					for j := range K {
						if g := G.At(i, j); g > 0 {
							z += math.Exp(s * g)
						}
					}
				}
				for i := range K {
					for j := range K {
						g, p := G.At(i, j), P.At(i, j)
						if (p == 0) != (g <= 0) {
							t.Fatalf("P[%d,%d] = %v for G = %v: want zero iff G ≤ 0", i, j, p, g)
						}
						var want float64
						if g > 0 {
							want = math.Exp(s*g) / z
						}
						if math.Abs(p-want) > 1e-14 {
							t.Fatalf("P[%d,%d] = %.17g, want %.17g", i, j, p, want)
						}
					}
				}
			})
		}
	}
}

func TestDistributionSelMixLimits(t *testing.T) {
	const K = 30
	rnd := rand.New(rand.NewPCG(2, 3))
	G := randGain(rnd, K, 1)
	var npos int
	bi, bj, best := 0, 0, math.Inf(-1)
	for i := range K {
		for j := range K {
			g := G.At(i, j)
			if g > 0 {
				npos++
			}
			if g > best {
				bi, bj, best = i, j, g
			}
		}
	}
	G.Set(bi, bj, best+0.01) // a unique argmax with a 0.01 gap

	t.Run("s→0 is uniform over positive gains", func(t *testing.T) {
		var P mat.Dense
		Distribution(&P, G, 1e-12, SelMix)
		checkProb(t, &P)
		for i := range K {
			for j := range K {
				want := 0.0
				if G.At(i, j) > 0 {
					want = 1 / float64(npos)
				}
				if got := P.At(i, j); math.Abs(got-want) > 1e-9 {
					t.Fatalf("P[%d,%d] = %v, want %v", i, j, got, want)
				}
			}
		}
	})
	t.Run("large s concentrates on argmax", func(t *testing.T) {
		var P mat.Dense
		Distribution(&P, G, 1e4, SelMix)
		checkProb(t, &P)
		// gap 0.01 × s 1e4 = 100 nats: the rest is ≤ K²e^{-100}.
		if got := P.At(bi, bj); got < 0.999 {
			t.Fatalf("P[argmax] = %v, want ≥ 0.999", got)
		}
	})
}

func TestDistributionAllNonPositive(t *testing.T) {
	for _, tc := range []struct {
		name string
		fill func(i, j int) float64
	}{
		{"all zero", func(int, int) float64 { return 0 }},
		{"all negative", func(i, j int) float64 { return -1 - float64(i*7+j) }},
		{"mixed zero and negative", func(i, j int) float64 { return -float64((i + j) % 2) }},
		{"all NaN", func(int, int) float64 { return math.NaN() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const K = 6
			G := mat.NewDense(K, K, nil)
			for i := range K {
				for j := range K {
					G.Set(i, j, tc.fill(i, j))
				}
			}
			var P mat.Dense
			Distribution(&P, G, 10, SelMix)
			checkProb(t, &P)
			for i := range K {
				for j := range K {
					if got := P.At(i, j); got != 1.0/(K*K) {
						t.Fatalf("P[%d,%d] = %v, want 1/%d", i, j, got, K*K)
					}
				}
			}
		})
	}
}

func TestDistributionExtremes(t *testing.T) {
	G := mat.NewDense(3, 3, []float64{
		1e300, -1e300, math.MaxFloat64,
		1e-300, 0, math.MaxFloat64,
		-math.MaxFloat64, math.NaN(), 5,
	})
	for _, s := range []float64{0, 1, 1e4, 1e300, math.MaxFloat64, math.Inf(1)} {
		t.Run(fmt.Sprint(s), func(t *testing.T) {
			var P mat.Dense
			Distribution(&P, G, s, SelMix)
			checkProb(t, &P)
			for _, ij := range [][2]int{{0, 1}, {1, 1}, {2, 0}, {2, 1}} {
				if p := P.At(ij[0], ij[1]); p != 0 {
					t.Errorf("P%v = %v for non-positive or NaN gain, want 0", ij, p)
				}
			}
			if s >= 1 {
				// The two tied maxima share the mass equally.
				if a, b := P.At(0, 2), P.At(1, 2); a != b || math.Abs(a-0.5) > 1e-12 {
					t.Errorf("tied maxima get %v, %v; want 0.5 each", a, b)
				}
			}
		})
	}
}

func TestDistributionPolicies(t *testing.T) {
	const K = 4
	G := mat.NewDense(K, K, []float64{
		-1, 2, 0, 3,
		3, -5, 1, 0,
		0, 0, 0, 0,
		-2, 3, 1, 1,
	})
	uniform := func(int, int) float64 { return 1.0 / (K * K) }
	for _, tc := range []struct {
		policy Policy
		want   func(i, j int) float64
	}{
		{Uniform, uniform},
		// argmax 3 occurs at (0,3), (1,0), (3,1): the first in row-major wins.
		{Greedy, func(i, j int) float64 {
			if i == 0 && j == 3 {
				return 1
			}
			return 0
		}},
		{None, func(int, int) float64 { return 0 }},
		{CSST, func(int, int) float64 { return 0 }},
		{MiSLAS2, func(int, int) float64 { return 0 }},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			P := mat.NewDense(K, K, nil)
			P.Set(2, 2, 42) // stale content must be overwritten
			Distribution(P, G, 10, tc.policy)
			if tc.policy.Mixes() {
				checkProb(t, P)
			}
			for i := range K {
				for j := range K {
					if got, want := P.At(i, j), tc.want(i, j); got != want {
						t.Fatalf("P[%d,%d] = %v, want %v", i, j, got, want)
					}
				}
			}
		})
	}
	t.Run("greedy all non-positive", func(t *testing.T) {
		G := mat.NewDense(2, 2, []float64{-3, -1, -1, -2})
		var P mat.Dense
		Distribution(&P, G, 10, Greedy)
		if P.At(0, 1) != 1 {
			t.Fatalf("P = %v, want all mass on (0,1)", mat.Formatted(&P))
		}
	})
}

func TestDistributionPanics(t *testing.T) {
	G := mat.NewDense(3, 3, nil)
	for _, tc := range []struct {
		name string
		call func()
	}{
		{"non-square G", func() { Distribution(&mat.Dense{}, mat.NewDense(2, 3, nil), 1, SelMix) }},
		{"dst wrong shape", func() { Distribution(mat.NewDense(2, 2, nil), G, 1, SelMix) }},
		{"negative s", func() { Distribution(&mat.Dense{}, G, -1, SelMix) }},
		{"NaN s", func() { Distribution(&mat.Dense{}, G, math.NaN(), SelMix) }},
		{"unknown policy", func() { Distribution(&mat.Dense{}, G, 1, Policy("mixup")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			tc.call()
		})
	}
}

// With NormMax the softmax sees G/max|G| (here max|G| = 4, from a negative
// entry); with NormNone, G itself. An all-zero G is left alone.
func TestNormalized(t *testing.T) {
	G := mat.NewDense(2, 2, []float64{1, -4, 2, 0.5})
	want := []float64{0.25, -1, 0.5, 0.125}
	for i, v := range Normalized(G, NormMax).RawMatrix().Data {
		if v != want[i] {
			t.Errorf("normalised G[%d] = %v, want %v", i, v, want[i])
		}
	}
	if Normalized(G, NormNone) != G {
		t.Error("without normalisation G itself must come back")
	}
	zero := mat.NewDense(2, 2, nil)
	if Normalized(zero, NormMax) != zero {
		t.Error("an all-zero G must be left alone")
	}
	if _, err := ParseNorm("median"); err == nil {
		t.Error(`ParseNorm("median") accepted`)
	}
}

// Every policy has its line in the picker; resample draws pairs and does
// not mix, and its P is SelMix's.
func TestPolicyDescribeAndResample(t *testing.T) {
	for _, p := range Policies() {
		if p.Describe() == "" {
			t.Errorf("policy %s has no description", p)
		}
	}
	if !Resample.DrawsPairs() || Resample.Mixes() || None.DrawsPairs() || !SelMix.DrawsPairs() {
		t.Error("resample must draw pairs and not mix; none draws none; selmix draws")
	}
	G := mat.NewDense(2, 2, []float64{0.3, -0.1, 0.2, 0})
	var a, b mat.Dense
	Distribution(&a, G, 4, SelMix)
	Distribution(&b, G, 4, Resample)
	// softmax(4·G) over the positive gains 0.3 and 0.2 only.
	e3, e2 := math.Exp(1.2), math.Exp(0.8)
	want := []float64{e3 / (e3 + e2), 0, e2 / (e3 + e2), 0}
	for i, w := range want {
		if math.Abs(b.RawMatrix().Data[i]-w) > 1e-15 || a.RawMatrix().Data[i] != b.RawMatrix().Data[i] {
			t.Errorf("P[%d]: resample %v, selmix %v, want %v", i, b.RawMatrix().Data[i], a.RawMatrix().Data[i], w)
		}
	}
}

package metric

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// zOracle is Φ⁻¹(q) found by bisection on Φ(z) = erfc(−z/√2)/2: another
// route than CoverageMargin's erfinv.
func zOracle(q float64) float64 {
	lo, hi := -10.0, 10.0
	for range 200 {
		mid := (lo + hi) / 2
		if math.Erfc(-mid/math.Sqrt2)/2 < q {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// wilsonLower is the lower end of the Wilson score interval of an observed
// share p on n samples at normal quantile z, in its closed form
// (Wilson 1927; e.g. Brown, Cai & DasGupta 2001, eq. 4).
func wilsonLower(p float64, n int, z float64) float64 {
	nf := float64(n)
	z2 := z * z
	return (p + z2/(2*nf) - z*math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))) / (1 + z2/nf)
}

// The margin puts the observed share where its one-sided Wilson lower
// bound is exactly the target: checked by the interval's closed form with
// the quantile found another way, and against the tabulated quantiles.
func TestCoverageMarginWilson(t *testing.T) {
	// Tabulated standard normal quantiles (Abramowitz & Stegun, table 26.5).
	for _, tc := range []struct{ q, z float64 }{{0.95, 1.6448536269514722}, {0.975, 1.959963984540054}, {0.99, 2.3263478740408408}} {
		if got := zOracle(tc.q); math.Abs(got-tc.z) > 1e-12 {
			t.Fatalf("oracle Φ⁻¹(%v) = %v, want %v", tc.q, got, tc.z)
		}
		if got := CoverageMargin(0.25, 1, tc.q); math.Abs(got-tc.z*math.Sqrt(0.25*0.75)) > 1e-12 {
			t.Errorf("CoverageMargin(0.25, 1, %v) = %v, want z·√(c(1−c)) = %v", tc.q, got, tc.z*math.Sqrt(0.25*0.75))
		}
	}
	// The built-in experiment: α/K = 0.095, 5000 validation samples, 95 %:
	// 1.6448536·√(0.095·0.905/5000) = 0.0068207 (to 7 digits).
	if got := CoverageMargin(0.095, 5000, 0.95); math.Abs(got-0.0068207) > 5e-8 {
		t.Errorf("CoverageMargin(0.095, 5000, 0.95) = %.8f, want 0.0068207", got)
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		c := 0.001 + 0.9*rnd.Float64()
		n := 10 + rnd.IntN(100000)
		q := 0.5 + 0.499*rnd.Float64()
		d := CoverageMargin(c, n, q)
		z := zOracle(q)
		if got := wilsonLower(c+d, n, z); math.Abs(got-c) > 1e-9 {
			t.Errorf("c=%v n=%d q=%v: the Wilson lower bound of c+δ = %v is %v, want c", c, n, q, c+d, got)
		}
		// A share a little below c+δ no longer certifies c.
		if got := wilsonLower(c+d-1e-6, n, z); !(got < c) {
			t.Errorf("c=%v n=%d q=%v: Wilson lower bound of c+δ−1e-6 = %v, want < c", c, n, q, got)
		}
	}
}

// The multipliers aim at α/K + δ: a class exactly at the aim has λ = 0 and
// one at α/K the multiplier a coverage δ short of the bound would have;
// head/tail groups take the margin of their share over their size.
func TestMultipliersMargin(t *testing.T) {
	// 4 classes, α/K = 0.2375; coverages (0.3, 0.25, 0.2375, 0.2125).
	C := dense(4, []float64{
		0.25, 0, 0, 0,
		0.05, 0.2, 0, 0,
		0, 0.05, 0.2, 0,
		0, 0, 0.0375, 0.2125,
	})
	r, err := NewReport(C, nil)
	if err != nil {
		t.Fatal(err)
	}
	lam := func(cov, aim float64) float64 { return math.Max(0, 100*(1-math.Exp((cov-aim)/0.01))) }
	bound := 0.95 / 4
	for _, tc := range []struct {
		name string
		p    Params
		aim  float64
	}{
		{"none", Params{}, bound},
		{"by hand", Params{Margin: 0.0125}, bound + 0.0125},
		{"wilson", Params{Conf: 0.9, N: 4000}, bound + zOracle(0.9)*math.Sqrt(bound*(1-bound)/4000)},
		// 0.2375 + 1.28·√(0.2375·0.7625/400) = 0.265 > 1/K: capped.
		{"wilson capped", Params{Conf: 0.9, N: 400}, 0.25},
		{"by hand capped", Params{Margin: 0.1}, 0.25},
	} {
		got := Multipliers(MeanRecallCov, r, nil, tc.p)
		for j, c := range r.Coverage {
			if want := lam(c, tc.aim); math.Abs(got[j]-want) > 1e-9 {
				t.Errorf("%s: λ[%d] = %v, want %v (coverage %v, aim %v)", tc.name, j, got[j], want, c, tc.aim)
			}
		}
		if a := tc.p.WithDefaults(4).Aim(4, 1); math.Abs(a-tc.aim) > 1e-12 {
			t.Errorf("%s: Aim = %v, want %v", tc.name, a, tc.aim)
		}
	}
	// Groups: K = 4 → tail = {3}, head = {0, 1, 2}; the head's share of
	// 4000 samples aims at 3·bound + z·√(s(1−s)/n) for the share s = 3·bound.
	p := Params{Conf: 0.9, N: 4000}
	z := zOracle(0.9)
	sh := 3 * bound
	aimH := (sh + z*math.Sqrt(sh*(1-sh)/4000)) / 3
	aimT := bound + z*math.Sqrt(bound*(1-bound)/4000)
	got := Multipliers(MeanRecallHTCov, r, nil, p)
	if want := []float64{lam(r.HeadCoverage, aimH), lam(r.TailCoverage, aimT)}; math.Abs(got[0]-want[0]) > 1e-9 || math.Abs(got[1]-want[1]) > 1e-9 {
		t.Errorf("head/tail multipliers %v, want %v (aims %v, %v)", got, want, aimH, aimT)
	}
}

// With a margin δ by hand, the optimized ψ of a class-coverage objective is
// the paper's ψ at the stricter bound α' = α + K·δ (the margin changes the
// aim, nothing else); the reported values (Values) keep α/K.
func TestMarginIsStricterBound(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	for i := range 20 {
		K := 3 + rnd.IntN(8)
		C := randConfusion(rnd, K, 10)
		d := 0.05 / float64(K) * rnd.Float64() // below the cap 1/K
		for _, obj := range []Objective{MeanRecallCov, HMeanCov, "gmean@cov"} {
			got, err := Evaluate(obj, C, nil, Params{Margin: d})
			if err != nil {
				t.Fatal(err)
			}
			want, err := Evaluate(obj, C, nil, Params{Alpha: 0.95 + float64(K)*d})
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got.Psi-want.Psi) > 1e-12 || !equalish(got.Lambda, want.Lambda, 1e-9) || !equalish(got.D.RawMatrix().Data, want.D.RawMatrix().Data, 1e-12) {
				t.Errorf("case %d %s δ=%v: ψ %v, want %v at α' = α + Kδ", i, obj, d, got.Psi, want.Psi)
			}
		}
		vm, err := Values(C, nil, Params{Conf: 0.95, N: 1000})
		if err != nil {
			t.Fatal(err)
		}
		v0, err := Values(C, nil, Params{})
		if err != nil {
			t.Fatal(err)
		}
		if !equalish(vm, v0, 0) {
			t.Errorf("case %d: Values with a margin %v, want the paper's %v", i, vm, v0)
		}
	}
}

func equalish(a, b []float64, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > tol {
			return false
		}
	}
	return true
}

func TestParamsMarginValidate(t *testing.T) {
	for _, tc := range []struct {
		p    Params
		want string
	}{
		{Params{Conf: 1, N: 10}, "Conf"},
		{Params{Conf: 1.5, N: 10}, "Conf"},
		{Params{Conf: -0.1, N: 10}, "Conf"},
		{Params{Conf: 0.95}, "validation size"},
		{Params{Margin: -0.01}, "Margin"},
		{Params{Margin: math.NaN()}, "Margin"},
	} {
		err := tc.p.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one naming %s", tc.p, err, tc.want)
		}
	}
	for _, p := range []Params{{Conf: 0.95, N: 1}, {Margin: 0.01}, {}} {
		if err := p.Validate(); err != nil {
			t.Errorf("%+v: %v", p, err)
		}
	}
}

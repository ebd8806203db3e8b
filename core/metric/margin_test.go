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

// The margin is z_q standard deviations of the share: the quantile checked
// against tabulated values and bisection.
func TestCoverageMarginQuantile(t *testing.T) {
	// Tabulated standard normal quantiles (Abramowitz & Stegun, table 26.5).
	for _, tc := range []struct{ q, z float64 }{{0.95, 1.6448536269514722}, {0.975, 1.959963984540054}, {0.99, 2.3263478740408408}} {
		if got := zOracle(tc.q); math.Abs(got-tc.z) > 1e-12 {
			t.Fatalf("oracle Φ⁻¹(%v) = %v, want %v", tc.q, got, tc.z)
		}
		if got := CoverageMargin(0.25, 4, tc.q); math.Abs(got-tc.z*0.25) > 1e-12 {
			t.Errorf("CoverageMargin(0.25, 4, %v) = %v, want z·√(1/16) = %v", tc.q, got, tc.z*0.25)
		}
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		v, n, q := 0.25*rnd.Float64(), 1+rnd.IntN(100000), 0.5+0.499*rnd.Float64()
		if got, want := CoverageMargin(v, n, q), zOracle(q)*math.Sqrt(v/float64(n)); math.Abs(got-want) > 1e-12 {
			t.Errorf("CoverageMargin(%v, %d, %v) = %v, want %v", v, n, q, got, want)
		}
	}
}

// Spread/N is the variance of a group's validation share when the
// validation set is drawn class by class: checked against the share's
// variance over simulated validation sets, and against the bound the
// unstratified binomial gives.
func TestSpreadMonteCarlo(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 6))
	for tc := range 4 {
		K := 3 + tc
		n := make([]int, K) // class counts of the validation set
		N := 0
		for k := range n {
			n[k] = 20 + rnd.IntN(200)
			N += n[k]
		}
		q := make([][]float64, K) // P(pred = j | y = k)
		for k := range q {
			q[k] = make([]float64, K)
			var s float64
			for j := range q[k] {
				q[k][j] = rnd.Float64() * rnd.Float64()
				if j == k {
					q[k][j] += 2
				}
				s += q[k][j]
			}
			for j := range q[k] {
				q[k][j] /= s
			}
		}
		C := make([]float64, K*K)
		for k := range K {
			for j := range K {
				C[k*K+j] = float64(n[k]) * q[k][j] / float64(N)
			}
		}
		groups := [][]bool{make([]bool, K), make([]bool, K)}
		groups[0][1] = true
		groups[1][0], groups[1][K-1] = true, true
		for gi, in := range groups {
			got, err := Spread(dense(K, C), in)
			if err != nil {
				t.Fatal(err)
			}
			// Simulate: each class's n_k samples land in the group
			// independently with probability Σ_{j∈in} q_kj.
			const draws = 20000
			var sum, sum2 float64
			for range draws {
				hits := 0
				for k := range K {
					var pk float64
					for j, ok := range in {
						if ok {
							pk += q[k][j]
						}
					}
					for range n[k] {
						if rnd.Float64() < pk {
							hits++
						}
					}
				}
				x := float64(hits) / float64(N)
				sum += x
				sum2 += x * x
			}
			mean := sum / draws
			mc := (sum2/draws - mean*mean) * float64(N)
			if math.Abs(got-mc) > 0.04*mc {
				t.Errorf("K=%d group %d: Spread %v, simulated N·Var %v", K, gi, got, mc)
			}
			var c float64
			for k := range K {
				for j, ok := range in {
					if ok {
						c += C[k*K+j]
					}
				}
			}
			if got > c*(1-c)+1e-12 {
				t.Errorf("K=%d group %d: Spread %v above the unstratified c(1−c) = %v", K, gi, got, c*(1-c))
			}
		}
	}
}

// The multipliers aim at α/K + δ_j: δ_j by hand, or z_q·√(Spread_j/N) per
// class at a confidence, capped at 1/K; head/tail groups take the margin
// of their share over their size.
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
	// Spread of each column by hand: Σ_k C_kj·(1 − C_kj/π_k), π = 1/4.
	sp := []float64{
		0.25*(1-1) + 0.05*(1-0.2),
		0.2*(1-0.8) + 0.05*(1-0.2),
		0.2*(1-0.8) + 0.0375*(1-0.15),
		0.2125 * (1 - 0.85),
	}
	z := zOracle(0.9)
	for _, tc := range []struct {
		name string
		p    Params
		aim  func(j int) float64
	}{
		{"none", Params{}, func(int) float64 { return bound }},
		{"by hand", Params{Margin: 0.0125}, func(int) float64 { return bound + 0.0125 }},
		{"confidence", Params{Conf: 0.9, N: 4000}, func(j int) float64 { return min(bound+z*math.Sqrt(sp[j]/4000), 0.25) }},
		// At N = 40 the margins pass 1/K: capped (class 0's spread is its
		// small false-positive share, so it stays below).
		{"confidence capped", Params{Conf: 0.9, N: 40}, func(j int) float64 { return min(bound+z*math.Sqrt(sp[j]/40), 0.25) }},
		{"by hand capped", Params{Margin: 0.1}, func(int) float64 { return 0.25 }},
	} {
		ev, err := Evaluate(MeanRecallCov, C, nil, tc.p)
		if err != nil {
			t.Fatal(err)
		}
		got := ev.Lambda
		for j, c := range r.Coverage {
			if want := lam(c, tc.aim(j)); math.Abs(got[j]-want) > 1e-9 {
				t.Errorf("%s: λ[%d] = %v, want %v (coverage %v, aim %v)", tc.name, j, got[j], want, c, tc.aim(j))
			}
			// The aims are reported as they were aimed at.
			if len(ev.Aims) != len(r.Coverage) || math.Abs(ev.Aims[j]-tc.aim(j)) > 1e-15 {
				t.Errorf("%s: aims %v, want aim[%d] = %v", tc.name, ev.Aims, j, tc.aim(j))
			}
		}
	}
	if ev, err := Evaluate(MinRecall, C, nil, Params{Conf: 0.9, N: 4000}); err != nil || ev.Aims != nil {
		t.Errorf("min-recall reports aims %v (%v), want none", ev.Aims, err)
	}
	if a := min(bound+z*math.Sqrt(sp[3]/40), 0.25); a != 0.25 {
		t.Fatalf("the capped case does not cap: %v", a)
	}
	// Groups: K = 4 → tail = {3}, head = {0, 1, 2}; the head's share
	// (columns 0–2 merged) aims at 3·bound + z·√(Spread_H/N), over 3.
	p := Params{Conf: 0.9, N: 4000}
	spH := 0.25*0 + 0.25*0 + 0.25*0 + 0.0375*(1-0.15) // rows 0–2 are all in the head
	aimH := (3*bound + z*math.Sqrt(spH/4000)) / 3
	aimT := bound + z*math.Sqrt(sp[3]/4000)
	evHT, err := Evaluate(MeanRecallHTCov, C, nil, p)
	if err != nil {
		t.Fatal(err)
	}
	got := evHT.Lambda
	if want := []float64{lam(r.HeadCoverage, aimH), lam(r.TailCoverage, aimT)}; math.Abs(got[0]-want[0]) > 1e-9 || math.Abs(got[1]-want[1]) > 1e-9 {
		t.Errorf("head/tail multipliers %v, want %v (aims %v, %v)", got, want, aimH, aimT)
	}
	if a := evHT.Aims; len(a) != 2 || math.Abs(a[0]-aimH) > 1e-15 || math.Abs(a[1]-aimT) > 1e-15 {
		t.Errorf("head/tail aims %v, want %v, %v", a, aimH, aimT)
	}
	// ψ aims where the multipliers do: Evaluate's ψ is the paper's with
	// each class's bound replaced by its aim.
	ev, err := Evaluate(MeanRecallCov, C, nil, Params{Conf: 0.9, N: 4000})
	if err != nil {
		t.Fatal(err)
	}
	var pen, lmax float64
	for j, c := range r.Coverage {
		pen += ev.Lambda[j] * (c - min(bound+z*math.Sqrt(sp[j]/4000), 0.25))
		lmax = max(lmax, ev.Lambda[j])
	}
	if want := (r.MeanRecall + pen) / (lmax + 1); math.Abs(ev.Psi-want) > 1e-12 {
		t.Errorf("ψ at the aims %v, want %v", ev.Psi, want)
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

// At K = 10 and K = 1000 the stratified margin's spreads (computed in
// O(K²)) equal Spread column by column and for the head and tail groups,
// and the aims Evaluate uses are α/K + z·√(spread/N), capped at 1/K.
func TestSpreadsAtScale(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 8))
	for _, K := range []int{10, 1000} {
		C := randConfusion(rnd, K, 100)
		st, err := load(C, nil)
		if err != nil {
			t.Fatal(err)
		}
		tail := TailSplit(st.prior)
		got := st.spreads(tail)
		in := make([]bool, K)
		cols := []int{0, 1, K / 2, K - 1}
		for _, j := range cols {
			in[j] = true
			want, err := Spread(C, in)
			in[j] = false
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got[j]-want) > 1e-12*max(1, want) {
				t.Errorf("K=%d column %d: spread %v, Spread %v", K, j, got[j], want)
			}
		}
		head := make([]bool, K)
		for j, tl := range tail {
			head[j] = !tl
		}
		for g, grp := range [][]bool{head, tail} {
			want, err := Spread(C, grp)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got[K+g]-want) > 1e-12*max(1, want) {
				t.Errorf("K=%d group %d: spread %v, Spread %v", K, g, got[K+g], want)
			}
		}
		p := Params{Conf: 0.95, N: 50 * K}
		ev, err := Evaluate(MeanRecallCov, C, nil, p)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := NewReport(C, nil)
		bound, z := 0.95/float64(K), zOracle(0.95)
		for _, j := range cols {
			aim := min(bound+z*math.Sqrt(got[j]/float64(p.N)), 1/float64(K))
			want := math.Max(0, 100*(1-math.Exp((r.Coverage[j]-aim)/0.01)))
			if math.Abs(ev.Lambda[j]-want) > 1e-9 {
				t.Errorf("K=%d: λ[%d] = %v, want %v (aim %v)", K, j, ev.Lambda[j], want, aim)
			}
		}
	}
}

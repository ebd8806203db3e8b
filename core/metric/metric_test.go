package metric

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// The first nine objectives keep the order runs of format 1 stored their
// values in (by position); new ones are appended.
func TestObjectives(t *testing.T) {
	v1 := []string{
		"mean-recall", "min-recall", "gmean", "hmean", "min-ht-recall",
		"mean-recall@cov", "hmean@cov", "mean-recall@ht-cov", "hmean@ht-cov",
	}
	got := Objectives()
	if len(got) < len(v1) {
		t.Fatalf("len(Objectives()) = %d, want at least %d", len(got), len(v1))
	}
	for i, name := range v1 {
		if string(got[i]) != name {
			t.Errorf("Objectives()[%d] = %q, want %q", i, got[i], name)
		}
	}
	seen := map[Objective]bool{}
	titles := map[string]bool{}
	for _, o := range got {
		p, err := ParseObjective(string(o))
		if err != nil || p != o {
			t.Errorf("ParseObjective(%q) = %q, %v; want %q, nil", o, p, err, o)
		}
		s, ok := o.Spec()
		if !ok || s.Title == "" || seen[o] || titles[s.Title] {
			t.Errorf("objective %q: spec %+v (seen %v): want one entry with a title of its own", o, s, seen[o])
		}
		seen[o], titles[s.Title] = true, true
	}
	for _, bad := range []string{"", "Mean-Recall", "minrecall", "hmean@cov "} {
		_, err := ParseObjective(bad)
		if err == nil {
			t.Errorf("ParseObjective(%q): no error", bad)
			continue
		}
		for _, o := range got {
			if !strings.Contains(err.Error(), string(o)) {
				t.Errorf("ParseObjective(%q) error %q does not list %q", bad, err, o)
			}
		}
	}
}

// Every objective is usable end to end from its table entry alone: its
// multipliers have the length its aggregate and constraint say, ψ and D
// exist and D's rows sum to zero (the finite-difference check in
// objective_test.go covers every objective too). core/experiment's tests
// check that the documents people read name it.
func TestEveryObjectiveEverywhere(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	for _, K := range []int{10, 23} {
		C := randConfusion(rng, K, 30)
		r, err := NewReport(C, nil)
		if err != nil {
			t.Fatal(err)
		}
		vals, err := Values(C, nil, Params{})
		if err != nil || len(vals) != len(Objectives()) {
			t.Fatalf("Values: %d values, %v", len(vals), err)
		}
		for i, o := range Objectives() {
			if l := Multipliers(o, r, nil, Params{}); len(l) != o.nLambda(K) {
				t.Errorf("%s K=%d: %d multipliers, the table says %d", o, K, len(l), o.nLambda(K))
			}
			ev, err := Evaluate(o, C, nil, Params{})
			if err != nil || ev.Psi != vals[i] || math.IsNaN(ev.Psi) {
				t.Errorf("%s K=%d: Evaluate ψ %v (%v), Values %v", o, K, ev.Psi, err, vals[i])
			}
		}
	}
}

func TestParamsWithDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Params
		K    int
		want Params
	}{
		{"zero K=10", Params{}, 10, Params{Omega: 40, Alpha: 0.95, Tau: 0.01, LambdaMax: 100}},
		{"zero K=11", Params{}, 11, Params{Omega: 20, Alpha: 0.95, Tau: 0.01, LambdaMax: 100}},
		{"zero K=100", Params{}, 100, Params{Omega: 20, Alpha: 0.95, Tau: 0.01, LambdaMax: 100}},
		{"set kept", Params{Omega: 5, Alpha: 0.5, Tau: 0.1, LambdaMax: 3}, 100, Params{Omega: 5, Alpha: 0.5, Tau: 0.1, LambdaMax: 3}},
		{"partly set", Params{Tau: 0.2}, 3, Params{Omega: 40, Alpha: 0.95, Tau: 0.2, LambdaMax: 100}},
	} {
		if got := tc.p.WithDefaults(tc.K); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestParamsValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		p       Params
		wantErr string
	}{
		{"zero", Params{}, ""},
		{"defaults", Params{}.WithDefaults(10), ""},
		{"negative tau", Params{Tau: -0.01}, "Tau"},
		{"NaN omega", Params{Omega: math.NaN()}, "Omega"},
		{"Inf lambda max", Params{LambdaMax: math.Inf(1)}, "LambdaMax"},
		{"negative alpha", Params{Alpha: -1}, "Alpha"},
	} {
		err := tc.p.Validate()
		checkErr(t, tc.name, err, tc.wantErr)
	}
}

// checkErr fails unless err is nil when want is "", or contains want.
func checkErr(t *testing.T, name string, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: unexpected error %v", name, err)
	case want != "" && err == nil:
		t.Errorf("%s: no error, want one containing %q", name, want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("%s: error %q does not contain %q", name, err, want)
	}
}

func TestCheckErrors(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	ok := mat.NewDense(2, 2, []float64{0.4, 0.1, 0.2, 0.3})
	for _, tc := range []struct {
		name    string
		C       mat.Matrix
		prior   []float64
		wantErr string
	}{
		{"valid", ok, nil, ""},
		{"valid with prior", ok, []float64{0.5, 0.5}, ""},
		{"prior within 1e-6", ok, []float64{0.5 + 5e-7, 0.5 - 5e-7}, ""},
		{"zero class", mat.NewDense(3, 3, []float64{0.5, 0, 0, 0, 0, 0, 0.2, 0, 0.3}), nil, "class 1 has no validation samples"},
		{"K=1", mat.NewDense(1, 1, []float64{1}), nil, "at least 2 classes"},
		{"non-square", mat.NewDense(2, 3, []float64{0.1, 0.1, 0.1, 0.2, 0.2, 0.3}), nil, "2×3, want square"},
		{"NaN", mat.NewDense(2, 2, []float64{0.4, 0.1, nan, 0.3}), nil, "entry (1,0) = NaN is not finite"},
		{"+Inf", mat.NewDense(2, 2, []float64{0.4, inf, 0.2, 0.3}), nil, "entry (0,1) = +Inf is not finite"},
		{"-Inf", mat.NewDense(2, 2, []float64{-inf, 0.1, 0.2, 0.3}), nil, "entry (0,0) = -Inf is not finite"},
		{"negative", mat.NewDense(2, 2, []float64{0.6, 0.2, 0.4, -0.2}), nil, "entry (1,1) = -0.2 is negative"},
		{"total 0.9", mat.NewDense(2, 2, []float64{0.4, 0.1, 0.2, 0.2}), nil, "sums to 0.9"},
		{"counts not normalised", mat.NewDense(2, 2, []float64{40, 10, 20, 30}), nil, "sums to 100, want 1"},
		{"total off by 2e-6", mat.NewDense(2, 2, []float64{0.4, 0.1, 0.2, 0.3 + 2e-6}), nil, "want 1"},
		{"row vs prior", ok, []float64{0.6, 0.4}, "row 0 sums to 0.5, want prior 0.6"},
		{"second row vs prior", mat.NewDense(3, 3, []float64{0.2, 0, 0, 0, 0.3, 0, 0, 0, 0.5}), []float64{0.2, 0.4, 0.4}, "row 1 sums to 0.3, want prior 0.4"},
	} {
		checkErr(t, tc.name, Check(tc.C, tc.prior), tc.wantErr)
	}
}

// Every entry point that takes C must report Check's errors, not panic or
// return NaN.
func TestEntryPointsReportBadData(t *testing.T) {
	bad := []struct {
		name    string
		C       *mat.Dense
		wantErr string
	}{
		{"zero class", mat.NewDense(2, 2, []float64{0.7, 0.3, 0, 0}), "class 1 has no validation samples"},
		{"NaN", mat.NewDense(2, 2, []float64{0.4, 0.1, math.NaN(), 0.3}), "(1,0)"},
		{"negative", mat.NewDense(2, 2, []float64{0.6, 0.2, 0.4, -0.2}), "(1,1)"},
		{"total", mat.NewDense(2, 2, []float64{0.4, 0.1, 0.2, 0.2}), "sums to"},
		{"K=1", mat.NewDense(1, 1, []float64{1}), "at least 2"},
	}
	for _, tc := range bad {
		_, err := NewReport(tc.C, nil)
		checkErr(t, tc.name+"/NewReport", err, tc.wantErr)
		for _, obj := range Objectives() {
			name := tc.name + "/" + string(obj)
			ev, err := Evaluate(obj, tc.C, nil, Params{})
			checkErr(t, name+"/Evaluate", err, tc.wantErr)
			if ev.D != nil || ev.Lambda != nil {
				t.Errorf("%s/Evaluate: non-zero Eval on error: %+v", name, ev)
			}
			// Lambda of the right length for the declared size, so only C is wrong.
			K, _ := tc.C.Dims()
			lambda := make([]float64, obj.nLambda(K))
			_, err = Psi(obj, tc.C, nil, lambda, Params{})
			checkErr(t, name+"/Psi", err, tc.wantErr)
			var D mat.Dense
			checkErr(t, name+"/Grad", Grad(&D, obj, tc.C, nil, lambda, Params{}), tc.wantErr)
		}
	}
}

func TestTailSplit(t *testing.T) {
	seq := func(K int, f func(k int) float64) []float64 {
		c := make([]float64, K)
		for k := range c {
			c[k] = f(k)
		}
		return c
	}
	for _, tc := range []struct {
		name   string
		counts []float64
		want   []int // tail classes
	}{
		{"K=0", nil, nil},
		{"K=1", []float64{5}, []int{0}},
		{"K=2 distinct", []float64{1, 9}, []int{0}},
		{"K=2 tie: higher index is tail", []float64{0.5, 0.5}, []int{1}},
		{"K=3", []float64{10, 1, 5}, []int{1}},
		{"K=3 tie at min", []float64{1, 10, 1}, []int{2}},
		{"K=10 long-tailed", seq(10, func(k int) float64 { return 5000 * math.Pow(100, -float64(k)/9) }), []int{9}},
		{"K=10 tie picks higher index", []float64{3, 1, 2, 1, 5, 5, 5, 5, 5, 5}, []int{3}},
		{"K=19 floor(1.9)=1", seq(19, func(k int) float64 { return float64(19 - k) }), []int{18}},
		{"K=20 three-way tie for two slots", seq(20, func(k int) float64 {
			if k == 2 || k == 5 || k == 7 {
				return 1
			}
			return 10
		}), []int{5, 7}},
		{"K=100 decreasing", seq(100, func(k int) float64 { return float64(1000 - k) }), []int{90, 91, 92, 93, 94, 95, 96, 97, 98, 99}},
		{"K=100 increasing", seq(100, func(k int) float64 { return float64(k + 1) }), []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{"K=100 all equal", seq(100, func(int) float64 { return 0.01 }), []int{90, 91, 92, 93, 94, 95, 96, 97, 98, 99}},
		{"NaN is least frequent", []float64{math.NaN(), 1, 2}, []int{0}},
		{"NaN ties NaN by index", []float64{math.NaN(), 1, math.NaN()}, []int{2}},
		// A balanced prior carries rounding noise: class 3 is 1 ulp below the
		// rest, yet the tie still goes to the highest index.
		{"rounding noise is a tie", []float64{0.1, 0.1, 0.1, math.Nextafter(0.1, 0), 0.1, 0.1, 0.1, 0.1, 0.1, math.Nextafter(0.1, 1)}, []int{9}},
		{"1e-6 relative is not a tie", []float64{0.1, 0.1, 0.1, 0.1 * (1 - 1e-6), 0.1, 0.1, 0.1, 0.1, 0.1, 0.1}, []int{3}},
		{"counts near 1e8 differ by one", []float64{1e8, 1e8 - 1, 1e8}, []int{1}},
	} {
		got := TailSplit(tc.counts)
		if len(got) != len(tc.counts) {
			t.Errorf("%s: len = %d, want %d", tc.name, len(got), len(tc.counts))
			continue
		}
		var gotIdx []int
		for k, tl := range got {
			if tl {
				gotIdx = append(gotIdx, k)
			}
		}
		if !slices.Equal(gotIdx, tc.want) {
			t.Errorf("%s: tail = %v, want %v", tc.name, gotIdx, tc.want)
		}
	}
}

// A typo of an objective is named with the objective it is near.
func TestParseObjectiveSuggests(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"minrecall", `metric: unknown objective "minrecall" (did you mean min-recall?) (valid: `},
		{"hmean@cv", `(did you mean hmean@cov?)`},
		{"accuracy", `metric: unknown objective "accuracy" (valid: `},
	} {
		_, err := ParseObjective(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseObjective(%q) = %v, want it to contain %q", c.in, err, c.want)
		}
	}
}

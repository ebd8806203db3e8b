package metric

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestIntegrateAccumulates: a class short of its aim gains rate·shortfall
// per refresh up to λ_max, one above it loses as much down to 0, and the
// multipliers EvaluateMemory uses are the memoryless ones plus the terms.
func TestIntegrateAccumulates(t *testing.T) {
	// Class 2 is predicted as class 0 a third of the time: its coverage
	// 0.2 is short of α/K = 0.95/3 ≈ 0.3167; class 0 covers 0.4667.
	C := mat.NewDense(3, 3, []float64{
		0.3, 0, 0,
		0.0333333333333333, 0.3, 0,
		0.1333333333333334, 0, 0.2333333333333333,
	})
	p := Params{Alpha: 0.95, LambdaMax: 100}
	e, err := Evaluate(MeanRecallCov, C, nil, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Cov) != 3 || math.Abs(e.Cov[0]-0.4666666666666667) > 1e-12 {
		t.Fatalf("Cov = %v, want the class coverages", e.Cov)
	}
	aim := 0.95 / 3
	I := Integrate(nil, e, 100, p)
	want := []float64{0, 100 * (aim - e.Cov[1]), 100 * (aim - e.Cov[2])}
	want[1] = max(0, want[1])
	for g := range want {
		if math.Abs(I[g]-want[g]) > 1e-12 {
			t.Fatalf("I after one refresh = %v, want %v", I, want)
		}
	}
	// Fifty more refreshes at the same C: capped at λ_max.
	for range 50 {
		I = Integrate(I, e, 100, p)
	}
	if I[2] != 100 || I[0] != 0 {
		t.Fatalf("I after 51 refreshes = %v, want class 2 at λ_max 100 and class 0 at 0", I)
	}
	// A class above its aim gives back what it held.
	I2 := Integrate([]float64{5, 5, 5}, e, 100, p)
	if want0 := max(0, 5+100*(aim-e.Cov[0])); math.Abs(I2[0]-want0) > 1e-12 {
		t.Fatalf("class 0 above its aim: I = %v, want %v", I2[0], want0)
	}

	var m Eval
	half := []float64{10, 20, 30}
	if err := EvaluateMemory(&m, MeanRecallCov, C, nil, p, half); err != nil {
		t.Fatal(err)
	}
	for j := range 3 {
		if w := min(100, e.Lambda[j]+half[j]); math.Abs(m.Lambda[j]-w) > 1e-12 {
			t.Fatalf("λ_%d = %v, want memoryless %v + %v", j, m.Lambda[j], e.Lambda[j], half[j])
		}
	}
	psi, err := Psi(MeanRecallCov, C, nil, m.Lambda, p)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(psi-m.Psi) > 1e-15 {
		t.Fatalf("ψ with memory %v, Psi at its multipliers %v", m.Psi, psi)
	}
	if Integrate(nil, mustEval(t, MinRecall, C, p), 100, p) != nil {
		t.Fatal("an objective without a coverage constraint has no integral terms")
	}
}

func mustEval(t *testing.T, o Objective, C mat.Matrix, p Params) Eval {
	t.Helper()
	e, err := Evaluate(o, C, nil, p)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestFamilyMargin: the margin for every one of m constraints at once is
// the one-class margin at confidence 1 − (1−q)/m, and a test set of NTest
// samples adds its own variance: δ = z·sqrt(spread·(1/N + 1/NTest)).
func TestFamilyMargin(t *testing.T) {
	const spread, n = 0.02, 5000
	one := Params{Conf: 0.95, N: n}
	all := Params{Conf: 0.95, N: n, Family: 10, NTest: 10000}
	// z at 0.995 is 2.5758293035489; at 0.95 1.6448536269514722.
	if got, want := one.familyMargin(spread), 1.6448536269514722*math.Sqrt(spread/n); math.Abs(got-want) > 1e-12 {
		t.Fatalf("one class: δ = %v, want %v", got, want)
	}
	if got, want := all.familyMargin(spread), 2.5758293035489004*math.Sqrt(spread*(1.0/n+1.0/10000)); math.Abs(got-want) > 1e-9 {
		t.Fatalf("ten classes with a test set: δ = %v, want %v", got, want)
	}
	if err := (Params{Family: -1}).Validate(); err == nil {
		t.Fatal("a negative family validated")
	}
}

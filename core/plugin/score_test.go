package plugin

import (
	"math"
	"math/rand/v2"
	"testing"

	"selmix/core/metric"
)

// scorerAt returns a scorer of obj at the counts of pred against y.
func scorerAt(t *testing.T, obj metric.Objective, pred, y []int, K int, tail []bool, p metric.Params) *scorer {
	t.Helper()
	n := make([]int, K)
	for _, c := range y {
		n[c]++
	}
	if tail == nil {
		prior := make([]float64, K)
		for k, c := range n {
			prior[k] = float64(c)
		}
		tail = metric.TailSplit(prior)
	}
	s, err := newScorer(obj, n, tail, p)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range y {
		s.c[pred[i]]++
		if pred[i] == c {
			s.d[c]++
		}
	}
	s.rebuild()
	return s
}

// valuesAt is metric.Values' ψ of obj at pred against y.
func valuesAt(t *testing.T, obj metric.Objective, pred, y []int, K int, tail []bool, p metric.Params) float64 {
	t.Helper()
	C, err := Confusion(pred, y, K)
	if err != nil {
		t.Fatal(err)
	}
	v, err := metric.Values(C, tail, p)
	if err != nil {
		t.Fatal(err)
	}
	return obj.In(v)
}

// The scorer is metric.Values' ψ for every objective, summed afresh and
// after thousands of single-sample moves, including recalls of 0 (the
// clamp of the G-mean and H-mean) and coverages on both sides of α/K.
func TestScorerMatchesValues(t *testing.T) {
	for _, c := range []struct {
		name string
		K, N int
		p    metric.Params
		// acc is how often a sample starts predicted right.
		acc float64
	}{
		{"K=3", 3, 60, metric.Params{}, 0.6},
		{"K=10", 10, 400, metric.Params{}, 0.7},
		{"K=10 sharp", 10, 400, metric.Params{Omega: 400, Alpha: 0.5, Tau: 0.05, LambdaMax: 10}, 0.5},
		{"K=40 weak", 40, 800, metric.Params{}, 0.1},
	} {
		for _, obj := range metric.Objectives() {
			t.Run(c.name+"/"+string(obj), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(7, uint64(c.K)))
				y := make([]int, c.N)
				pred := make([]int, c.N)
				for i := range y {
					y[i] = i % c.K
					if i >= c.K && rng.Float64() < 0.3 {
						y[i] = rng.IntN(c.K / 2) // a long head
					}
					pred[i] = y[i]
					if rng.Float64() > c.acc {
						pred[i] = rng.IntN(c.K)
					}
				}
				s := scorerAt(t, obj, pred, y, c.K, nil, c.p)
				tail := s.tail
				if got, want := s.value(), valuesAt(t, obj, pred, y, c.K, tail, c.p); math.Abs(got-want) > 1e-12 {
					t.Fatalf("afresh: scorer ψ = %.15g, metric.Values %.15g", got, want)
				}
				for step := range 3000 {
					i := rng.IntN(c.N)
					to := rng.IntN(c.K)
					if step%3 == 0 {
						to = y[i] // some steps back to right, so recalls rise too
					}
					s.move(y[i], pred[i], to)
					pred[i] = to
					if step%97 != 0 {
						continue
					}
					if got, want := s.value(), valuesAt(t, obj, pred, y, c.K, tail, c.p); math.Abs(got-want) > 1e-11 {
						t.Fatalf("after %d moves: scorer ψ = %.15g, metric.Values %.15g", step+1, got, want)
					}
				}
			})
		}
	}
}

// The coverage histogram tracks the least coverage: a constraint's
// normaliser depends on it alone.
func TestScorerMinCoverage(t *testing.T) {
	y := []int{0, 0, 1, 1, 2, 2}
	pred := []int{0, 0, 1, 1, 2, 2}
	s := scorerAt(t, metric.MeanRecallCov, pred, y, 3, nil, metric.Params{})
	for _, m := range []struct{ i, to, want int }{
		{4, 0, 1}, {5, 1, 0}, {0, 2, 1}, {1, 2, 1}, {4, 2, 0},
	} {
		s.move(y[m.i], pred[m.i], m.to)
		pred[m.i] = m.to
		if s.minc != m.want {
			t.Errorf("after sample %d to %d (coverage counts %v): least count %d, want %d", m.i, m.to, s.c, s.minc, m.want)
		}
	}
}

package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

func randF32(rng *rand.Rand, n int, scale float64) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(scale * rng.NormFloat64())
	}
	return out
}

func randLabels(rng *rand.Rand, n, k int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = rng.IntN(k)
	}
	return out
}

// Gradient check tolerance: central differences with h = 1e-5 in float64
// have truncation error O(h²·f”') ≈ 1e-10 and round-off ≈ 1e-16/h ≈ 1e-11;
// we allow |analytic − numeric| ≤ 1e-6·max(1, |numeric|). ReLU and max-pool
// kinks could break this for a coordinate within h of a kink; with random
// inputs that has negligible probability (and the seeds are fixed).
const gradTol = 1e-6

func TestGradientCheck(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
	}{
		{"mlp", Config{Arch: "mlp", In: 12, Hidden: []int{7, 5}}},
		{"mlp-1layer", Config{Arch: "mlp", In: 12, Hidden: []int{6}}},
		{"cnn", Config{Arch: "cnn", In: 64}},
		{"identity", Config{Arch: "identity", In: 12}},
		{"identity-adapter", Config{Arch: "identity", In: 12, Adapter: 6}},
	}
	for _, c := range cases {
		for _, mode := range []string{"mix", "ce", "soft"} {
			mix := mode == "mix"
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				cfg := c.cfg
				cfg.Classes, cfg.Batch, cfg.Dtype, cfg.Seed = 3, 4, "float64", 7
				n := newNet(t, cfg)
				// Non-zero biases so that their gradients are exercised in
				// a generic position.
				rng := rand.New(rand.NewPCG(1, 2))
				for _, p := range n.params {
					if !p.decay {
						v := p.val.Float64s()
						for i := range v {
							v[i] = 0.1 * rng.NormFloat64()
						}
					}
				}
				b, in := cfg.Batch, cfg.In
				x1, x2 := randF32(rng, b*in, 1), randF32(rng, b*in, 1)
				beta := []float32{0.9, 0.3, 0.55, 1}
				y := randLabels(rng, b, 3)
				adj := []float32{-1.5, 0.2, 0.7}
				var targets []float32 // nil: one-hot
				if mode == "soft" {
					// Rows that do not sum to 1, with a zero, as CSST's
					// targets M = L·D⁻¹ can be.
					targets = []float32{1, 0.4, 0, 0.3, 1, 0.2, 0.5, 0.25, 0.8}
				}
				lossAt := func() float64 {
					l, _, err := n.lossGrad(mix, x1, x2, beta, y, adj, targets)
					if err != nil {
						t.Fatal(err)
					}
					return l
				}
				_, grads, err := n.lossGrad(mix, x1, x2, beta, y, adj, targets)
				if err != nil {
					t.Fatal(err)
				}
				const h = 1e-5
				for pi, p := range n.params {
					w := p.val.Float64s()
					// Check every coordinate of small tensors, a fixed random
					// subset of large ones.
					idx := make([]int, 0, len(w))
					if len(w) <= 60 {
						for i := range w {
							idx = append(idx, i)
						}
					} else {
						for range 60 {
							idx = append(idx, rng.IntN(len(w)))
						}
					}
					var nonzero int
					for _, i := range idx {
						old := w[i]
						w[i] = old + h
						lp := lossAt()
						w[i] = old - h
						lm := lossAt()
						w[i] = old
						num := (lp - lm) / (2 * h)
						got := grads[pi][i]
						if math.Abs(got-num) > gradTol*math.Max(1, math.Abs(num)) {
							t.Errorf("%s[%d]: analytic %.10g, numeric %.10g", p.name, i, got, num)
						}
						if num != 0 {
							nonzero++
						}
					}
					if nonzero == 0 {
						t.Errorf("%s: all checked gradients are zero", p.name)
					}
				}
			})
		}
	}
}

package train_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"selmix/core/data"
	"selmix/core/local"
	"selmix/core/loop"
	"selmix/core/model"
	"selmix/core/train"
)

// featureSplit is a long-tailed Gaussian-cluster problem on features: K
// classes in d dimensions, labeled counts n1·ρ^(−k/(K−1)) with ρ = 100 and
// at least 2, and nVal validation and test samples spread evenly.
func featureSplit(K, d, n1, nVal int, seed uint64) *data.Split {
	r := rand.New(rand.NewPCG(seed, 3))
	means := make([]float32, K*d)
	for i := range means {
		means[i] = float32(r.NormFloat64())
	}
	gen := func(counts []int) data.Set {
		n := 0
		for _, c := range counts {
			n += c
		}
		s := data.Set{Dim: d, N: n, X: make([]float32, 0, n*d), Y: make([]int, 0, n)}
		for k, c := range counts {
			for range c {
				for j := range d {
					s.X = append(s.X, means[k*d+j]+float32(1.5*r.NormFloat64()))
				}
				s.Y = append(s.Y, k)
			}
		}
		return s
	}
	counts, even := make([]int, K), make([]int, K)
	for k := range K {
		counts[k] = max(2, int(float64(n1)*math.Pow(100, -float64(k)/float64(K-1))))
		even[k] = max(1, nVal/K)
	}
	return &data.Split{Labeled: gen(counts), Val: gen(even), Test: gen(even), K: K, TrainCounts: counts}
}

// headLocal is a local.Local trainer over a linear head on the features.
func headLocal(b *testing.B, sp *data.Split, batch int) *local.Local {
	net, err := model.New(model.Config{Arch: "identity", In: sp.Labeled.Dim, Classes: sp.K, Batch: batch, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	l, err := local.New(net, sp, 1)
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// BenchmarkHeadStep is one SelMix step of a head on features — drawing B
// pairs from P, gathering and mixing their features, the SGD step — as the
// engine takes it.
func BenchmarkHeadStep(b *testing.B) {
	for _, c := range []struct {
		name     string
		K, d, n1 int
	}{{"K=10,d=64", 10, 64, 500}, {"K=100,d=64", 100, 64, 500}, {"K=1000,d=512", 1000, 512, 100}} {
		b.Run(c.name, func(b *testing.B) {
			sp := featureSplit(c.K, c.d, c.n1, 2*c.K, 2)
			l := headLocal(b, sp, 128)
			P := make([]float64, c.K*c.K)
			for i := range P {
				P[i] = 1 / float64(len(P))
			}
			r := &train.TrainRequest{Mode: train.ModeMixup, P: P, LR: []float64{1e-3}, Batch: 128, BetaMin: 0.6, WeightDecay: 5e-4, Momentum: 0.9}
			for b.Loop() {
				if _, err := l.Train(r); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/step")
		})
	}
}

// BenchmarkRefresh is one refresh of Alg. 2's outer loop on a head over
// features: the validation forward pass, C and Z, the multipliers, D, G and
// P, and every objective's value.
func BenchmarkRefresh(b *testing.B) {
	for _, c := range []struct {
		name         string
		K, d, n1, nv int
	}{{"K=10,d=64,n=5000", 10, 64, 500, 5000}, {"K=100,d=64,n=10000", 100, 64, 500, 10000}, {"K=1000,d=512,n=20000", 1000, 512, 100, 20000}} {
		b.Run(c.name, func(b *testing.B) {
			sp := featureSplit(c.K, c.d, c.n1, c.nv, 2)
			e, err := train.New(loop.DefaultConfig(), headLocal(b, sp, 128))
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if err := train.RunRefresh(e); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/refresh")
		})
	}
}

package gain

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func BenchmarkGain(b *testing.B) {
	for _, sz := range []struct{ K, d int }{
		{10, 128}, {100, 128}, {100, 512}, {1000, 2048},
	} {
		b.Run(fmt.Sprintf("K=%d/d=%d", sz.K, sz.d), func(b *testing.B) {
			pr := randProblem(rand.New(rand.NewPCG(1, 2)), sz.K, sz.d, 3)
			var c Computer
			var G mat.Dense
			if err := c.Gain(&G, pr.D, pr.Z, pr.W, pr.b, 0.8, Paper); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if err := c.Gain(&G, pr.D, pr.Z, pr.W, pr.b, 0.8, Paper); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDistribution(b *testing.B) {
	for _, K := range []int{100, 1000} {
		b.Run(fmt.Sprintf("K=%d", K), func(b *testing.B) {
			G := randGain(rand.New(rand.NewPCG(1, 2)), K, 1)
			var P mat.Dense
			Distribution(&P, G, 10, SelMix)
			for b.Loop() {
				Distribution(&P, G, 10, SelMix)
			}
		})
	}
}

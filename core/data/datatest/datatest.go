// Package datatest makes small synthetic long-tailed problems for tests.
package datatest

import (
	"math/rand/v2"

	"selmix/core/data"
)

// Blobs is K = len(counts) Gaussian blobs in dim dimensions (unit-normal
// means, noise 0.9): counts[k] labeled samples of class k, perClass
// validation and test samples of each class, and unl unlabeled samples of
// each class if unl > 0. The draws are in that order, from a PCG seeded by
// seed, so a split is the same on every machine.
func Blobs(dim int, counts []int, perClass, unl int, seed uint64) *data.Split {
	K := len(counts)
	r := rand.New(rand.NewPCG(seed, 7))
	means := make([][]float32, K)
	for k := range means {
		means[k] = make([]float32, dim)
		for j := range means[k] {
			means[k][j] = float32(r.NormFloat64())
		}
	}
	gen := func(n func(k int) int) data.Set {
		s := data.Set{Dim: dim}
		for k := range K {
			for range n(k) {
				for j := range dim {
					s.X = append(s.X, means[k][j]+float32(0.9*r.NormFloat64()))
				}
				s.Y = append(s.Y, k)
			}
		}
		s.N = len(s.Y)
		return s
	}
	each := func(c int) func(int) int { return func(int) int { return c } }
	sp := &data.Split{K: K, TrainCounts: counts}
	sp.Labeled = gen(func(k int) int { return counts[k] })
	sp.Val = gen(each(perClass))
	sp.Test = gen(each(perClass))
	if unl > 0 {
		sp.Unlabeled = gen(each(unl))
	}
	return sp
}

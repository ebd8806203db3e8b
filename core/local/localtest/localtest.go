// Package localtest is the toy problem that the engine's tests
// (core/train) and the in-process trainer's (core/local) share.
package localtest

import (
	"selmix/core/data"
	"selmix/core/data/datatest"
	"selmix/core/model"
)

// Split is a small long-tailed problem: K Gaussian blobs in dim dimensions
// with labeled counts n1, n1/3, n1/9, ... (at least 2).
func Split(K, dim, n1 int, seed uint64) *data.Split {
	counts, p := make([]int, K), 1
	for k := range counts {
		counts[k] = max(2, n1/p)
		p *= 3
	}
	return datatest.Blobs(dim, counts, 40, 0, seed)
}

// Net is a small MLP (16, 8 hidden units) for sp with batch size batch, or
// the error model.New gives.
func Net(sp *data.Split, batch int) (*model.Net, error) {
	return model.New(model.Config{Arch: "mlp", In: sp.Labeled.Dim, Hidden: []int{16, 8}, Classes: sp.K, Batch: batch, EvalBatch: 64, Seed: 3})
}

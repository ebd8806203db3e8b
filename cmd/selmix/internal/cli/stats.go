package cli

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"selmix/core/npzio"
)

// stats is the input of `selmix gain`: the validation statistics at one
// refresh of the fine-tuning loop.
type stats struct {
	K, d        int
	C, Z, W     *mat.Dense
	b           []float64
	trainCounts []float64 // nil when the archive has none
}

// counts is what decides the head/tail split: labeled training counts when
// known, the validation prior otherwise (SPEC §3).
func (s *stats) counts() []float64 {
	if s.trainCounts != nil {
		return s.trainCounts
	}
	p := make([]float64, s.K)
	for i := range p {
		p[i] = mat.Sum(s.C.RowView(i))
	}
	return p
}

// readStats reads and checks STATS.npz; every error names the file and key.
func readStats(path string) (*stats, error) {
	f, err := npzio.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c, shape, err := f.Float64("C", -1, -1)
	if err != nil {
		return nil, err
	}
	K := shape[0]
	if shape[1] != K {
		return nil, fmt.Errorf("%s: key \"C\": expected a square K×K matrix, got shape %v", path, shape)
	}
	if K < 2 {
		return nil, fmt.Errorf("%s: key \"C\": need at least 2 classes, got K=%d", path, K)
	}
	z, zs, err := f.Float64("Z", K, -1)
	if err != nil {
		return nil, err
	}
	d := zs[1]
	if d < 1 {
		return nil, fmt.Errorf("%s: key \"Z\": feature dimension d must be ≥ 1", path)
	}
	w, _, err := f.Float64("W", d, K)
	if err != nil {
		return nil, err
	}
	b, _, err := f.Float64("b", K)
	if err != nil {
		return nil, err
	}
	st := &stats{K: K, d: d,
		C: mat.NewDense(K, K, c), Z: mat.NewDense(K, d, z), W: mat.NewDense(d, K, w), b: b}
	if f.Has("train_counts") {
		tc, _, err := f.Float64("train_counts", K)
		if err != nil {
			return nil, err
		}
		for i, v := range tc {
			if !(v >= 0) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%s: key \"train_counts\": entry %d is %v, want a finite count ≥ 0", path, i, v)
			}
		}
		st.trainCounts = tc
	}
	for _, a := range []struct {
		key  string
		data []float64
	}{{"C", c}, {"Z", z}, {"W", w}, {"b", b}} {
		for i, v := range a.data {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%s: key %q: entry %d is %v, want a finite number", path, a.key, i, v)
			}
		}
	}
	return st, nil
}

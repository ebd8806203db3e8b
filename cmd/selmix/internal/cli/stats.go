package cli

import (
	"math"

	"gonum.org/v1/gonum/mat"

	"selmix/core/npy"
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
// known, the validation prior otherwise (docs/method.md, Notation).
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

// readStats reads and checks STATS.npz; every error names the file and
// the member.
func readStats(path string) (*stats, error) {
	z, err := npy.OpenNPZ(path)
	if err != nil {
		return nil, err
	}
	defer z.Close()
	return statsFromNPZ(z)
}

// float64Array reads array key, which must be float64 (the statistics are
// exchanged in double precision) of the shape want gives (-1: any).
func float64Array(z *npy.NPZ, key string, want ...int) ([]float64, []int, error) {
	a, err := z.Open(key)
	if err != nil {
		return nil, nil, err
	}
	defer a.Close()
	if a.DType.Kind != npy.Float || a.DType.Size != 8 {
		return nil, nil, a.Errorf("expected dtype float64 (<f8), got %s", a.DType)
	}
	if err := a.CheckShape(want...); err != nil {
		return nil, nil, err
	}
	v := make([]float64, a.Len())
	if err := a.ReadFloat64(v); err != nil {
		return nil, nil, err
	}
	return v, a.Shape, nil
}

func statsFromNPZ(ar *npy.NPZ) (*stats, error) {
	c, shape, err := float64Array(ar, "C", -1, -1)
	if err != nil {
		return nil, err
	}
	K := shape[0]
	if shape[1] != K {
		return nil, ar.Errorf("C", "expected a square K×K matrix, got shape %s", npy.ShapeString(shape))
	}
	if K < 2 {
		return nil, ar.Errorf("C", "need at least 2 classes, got K=%d", K)
	}
	z, zs, err := float64Array(ar, "Z", K, -1)
	if err != nil {
		return nil, err
	}
	d := zs[1]
	if d < 1 {
		return nil, ar.Errorf("Z", "feature dimension d must be ≥ 1")
	}
	w, _, err := float64Array(ar, "W", d, K)
	if err != nil {
		return nil, err
	}
	b, _, err := float64Array(ar, "b", K)
	if err != nil {
		return nil, err
	}
	st := &stats{K: K, d: d,
		C: mat.NewDense(K, K, c), Z: mat.NewDense(K, d, z), W: mat.NewDense(d, K, w), b: b}
	if ar.Has("train_counts") {
		tc, _, err := float64Array(ar, "train_counts", K)
		if err != nil {
			return nil, err
		}
		for i, v := range tc {
			if !(v >= 0) || math.IsInf(v, 0) {
				return nil, ar.Errorf("train_counts", "entry %d is %v, want a finite count ≥ 0", i, v)
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
				return nil, ar.Errorf(a.key, "entry %d is %v, want a finite number", i, v)
			}
		}
	}
	return st, nil
}

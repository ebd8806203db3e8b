package app

import (
	"math"

	"gonum.org/v1/gonum/mat"

	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/core/npy"
	"selmix/core/train"
)

// StatsFile is the validation statistics at one refresh as an .npz
// archive holds them (the input of `selmix gain`): C (K×K), Z (K×d), W
// (d×K), b (K) and optionally train_counts (K), all float64.
type StatsFile struct {
	K, D        int
	C, Z, W     *mat.Dense
	B           []float64
	TrainCounts []float64 // nil when the archive has none
}

// Counts is what decides the head/tail split: labeled training counts
// when known, the validation prior otherwise (docs/method.md, Notation).
func (s *StatsFile) Counts() []float64 {
	if s.TrainCounts != nil {
		return s.TrainCounts
	}
	p := make([]float64, s.K)
	for i := range p {
		p[i] = mat.Sum(s.C.RowView(i))
	}
	return p
}

// Stats is s as Decide takes it, with the head/tail split of Counts.
func (s *StatsFile) Stats() loop.Stats {
	return loop.Stats{C: s.C, Z: s.Z, W: s.W, B: s.B, Tail: metric.TailSplit(s.Counts())}
}

// ReadStats reads and checks the statistics archive at path; every error
// names the file and the member.
func ReadStats(path string) (*StatsFile, error) {
	z, err := npy.OpenNPZ(path)
	if err != nil {
		return nil, err
	}
	defer z.Close()
	return StatsFromNPZ(z)
}

// StatsFromNPZ reads and checks the statistics in ar: shapes that agree,
// at least 2 classes, finite numbers, counts ≥ 0.
func StatsFromNPZ(ar *npy.NPZ) (*StatsFile, error) {
	c, shape, err := ar.Float64s("C", -1, -1)
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
	z, zs, err := ar.Float64s("Z", K, -1)
	if err != nil {
		return nil, err
	}
	d := zs[1]
	if d < 1 {
		return nil, ar.Errorf("Z", "feature dimension d must be ≥ 1")
	}
	w, _, err := ar.Float64s("W", d, K)
	if err != nil {
		return nil, err
	}
	b, _, err := ar.Float64s("b", K)
	if err != nil {
		return nil, err
	}
	st := &StatsFile{K: K, D: d,
		C: mat.NewDense(K, K, c), Z: mat.NewDense(K, d, z), W: mat.NewDense(d, K, w), B: b}
	if ar.Has("train_counts") {
		tc, _, err := ar.Float64s("train_counts", K)
		if err != nil {
			return nil, err
		}
		for i, v := range tc {
			if !(v >= 0) || math.IsInf(v, 0) {
				return nil, ar.Errorf("train_counts", "entry %d is %v, want a finite count ≥ 0", i, v)
			}
		}
		st.TrainCounts = tc
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

// WriteDecision writes d as `selmix gain` does: G, P and D = ∂ψ/∂C̃ (K×K),
// the multipliers lambda and ψ (psi, a scalar), all float64.
func WriteDecision(path string, d *train.Decision) error {
	K, _ := d.G.Dims()
	ev := d.Eval
	return npy.WriteNPZ(path,
		npy.Entry{Name: "G", Shape: []int{K, K}, Data: d.G.RawMatrix().Data},
		npy.Entry{Name: "P", Shape: []int{K, K}, Data: d.P.RawMatrix().Data},
		npy.Entry{Name: "D", Shape: []int{K, K}, Data: ev.D.RawMatrix().Data},
		npy.Entry{Name: "lambda", Shape: []int{len(ev.Lambda)}, Data: append([]float64{}, ev.Lambda...)},
		npy.Entry{Name: "psi", Data: []float64{ev.Psi}},
	)
}

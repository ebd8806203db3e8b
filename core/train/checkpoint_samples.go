package train

import (
	"encoding/binary"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"selmix/core/gain"
)

// sampleSizes declares the samples form's arrays in a checkpoint, after
// the evaluation's and in 4-byte words (the features are float32 values,
// as the engine reads them; the labels int32): the N validation samples'
// features (N×d) and labels (N), then S training samples of each class
// (K·S×d).
type sampleSizes struct {
	N int `json:"n"`
	S int `json:"s"`
}

// words is the number of 4-byte words s declares for K classes in d
// dimensions.
func (s *sampleSizes) words(K, d int64) int64 {
	if s == nil {
		return 0
	}
	return int64(s.N)*d + int64(s.N) + K*int64(s.S)*d
}

// sampleWords encodes the samples form's arrays as a checkpoint holds
// them: features as float32 (the engine rounds them so when it reads
// them), labels as int32.
func sampleWords(sm *gain.SampleSet) []byte {
	n := len(sm.Y)
	b := make([]byte, 0, 4*(len(raw(sm.Val))+n+len(raw(sm.Pool))))
	for _, x := range raw(sm.Val) {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(x)))
	}
	for _, y := range sm.Y {
		b = binary.LittleEndian.AppendUint32(b, uint32(int32(y)))
	}
	for _, x := range raw(sm.Pool) {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(x)))
	}
	return b
}

// readSampleWords decodes what sampleWords wrote for K classes in d
// dimensions; a label outside [0, K) or a non-finite feature is an error.
func readSampleWords(b []byte, sz *sampleSizes, K, d int) (*gain.SampleSet, error) {
	word := func() uint32 {
		w := binary.LittleEndian.Uint32(b)
		b = b[4:]
		return w
	}
	floats := func(n int) ([]float64, error) {
		out := make([]float64, n)
		for i := range out {
			f := float64(math.Float32frombits(word()))
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, fmt.Errorf("%w: a sample feature is %v", ErrCheckpoint, f)
			}
			out[i] = f
		}
		return out, nil
	}
	val, err := floats(sz.N * d)
	if err != nil {
		return nil, err
	}
	y := make([]int, sz.N)
	for i := range y {
		v := int32(word())
		if v < 0 || int(v) >= K {
			return nil, fmt.Errorf("%w: sample label %d of %d classes", ErrCheckpoint, v, K)
		}
		y[i] = int(v)
	}
	pool, err := floats(K * sz.S * d)
	if err != nil {
		return nil, err
	}
	return &gain.SampleSet{Val: mat.NewDense(sz.N, d, val), Y: y, Pool: mat.NewDense(K*sz.S, d, pool), S: sz.S}, nil
}

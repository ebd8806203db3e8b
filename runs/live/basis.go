package live

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"

	"selmix/core/loop"

	"gonum.org/v1/gonum/mat"
)

// BasisData is a refresh's loop.Basis on the socket, for a client that
// forecasts intervals (the workbench's what-if preview, train.Preview):
// the validation statistics as base64 of little-endian float64 (a
// forecast from them equals the run's own prediction), sent once per
// refresh and only to a client whose hello asked for "stats".
type BasisData struct {
	Step     int     `json:"step"`
	Steps    int     `json:"steps"`
	Momentum float64 `json:"momentum"`
	N        int     `json:"n"` // validation samples
	K        int     `json:"k"`
	D        int     `json:"d"`
	Tail     []bool  `json:"tail"`
	C        string  `json:"c"` // K×K joint confusion matrix
	Z        string  `json:"z"` // K×d class centroids
	W        string  `json:"w"` // d×K head
	B        string  `json:"b"` // K biases
}

// MaxBasis bounds the floats of a Basis the server sends (K² + 2Kd + K):
// 8 MB of float64. A larger model's statistics stay in the run's
// process; its client forecasts nothing and says why.
const MaxBasis = 1 << 20

// basisFloats is how many floats b's statistics hold.
func basisFloats(K, d int) int { return K*K + 2*K*d + K }

// wireBasis is b for the socket; nil if it is too large to send.
func wireBasis(b *loop.Basis) *BasisData {
	K, _ := b.C.Dims()
	_, d := b.Z.Dims()
	if basisFloats(K, d) > MaxBasis {
		return nil
	}
	return &BasisData{
		Step: b.Step, Steps: b.Steps, Momentum: b.Momentum, N: b.N, K: K, D: d, Tail: b.Tail,
		C: packF64(b.C.RawMatrix().Data), Z: packF64(b.Z.RawMatrix().Data), W: packF64(b.W.RawMatrix().Data), B: packF64(b.B),
	}
}

// Basis reads the statistics back, checking their sizes and values: a
// process that is not ours may have sent them.
func (w *BasisData) Basis() (*loop.Basis, error) {
	K, d := w.K, w.D
	if K < 2 || d < 1 || basisFloats(K, d) > MaxBasis {
		return nil, fmt.Errorf("basis: %d classes × %d features", K, d)
	}
	if len(w.Tail) != K {
		return nil, fmt.Errorf("basis: tail has %d values for k = %d", len(w.Tail), K)
	}
	if w.Step < 0 || w.Steps < 1 || !(w.Momentum >= 0 && w.Momentum < 1) || w.N < 0 {
		return nil, fmt.Errorf("basis: step %d of %d, momentum %v, n %d", w.Step, w.Steps, w.Momentum, w.N)
	}
	var v [4][]float64
	for i, a := range []struct {
		name string
		s    string
		n    int
	}{{"c", w.C, K * K}, {"z", w.Z, K * d}, {"w", w.W, d * K}, {"b", w.B, K}} {
		x, err := unpackF64(a.s, a.n)
		if err != nil {
			return nil, fmt.Errorf("basis: %s: %v", a.name, err)
		}
		v[i] = x
	}
	return &loop.Basis{
		Stats: loop.Stats{C: mat.NewDense(K, K, v[0]), Z: mat.NewDense(K, d, v[1]), W: mat.NewDense(d, K, v[2]), B: v[3],
			Tail: append([]bool(nil), w.Tail...), N: w.N},
		Step: w.Step, Steps: w.Steps, Momentum: w.Momentum,
	}, nil
}

// packF64 is v as base64 of little-endian float64 values.
func packF64(v []float64) string {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// unpackF64 reverses packF64: n finite values.
func unpackF64(s string, n int) ([]float64, error) {
	if base64.StdEncoding.DecodedLen(len(s)) > 8*n+3 {
		return nil, fmt.Errorf("%d base64 bytes, want %d float64 values", len(s), n)
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	if len(b) != 8*n {
		return nil, fmt.Errorf("%d bytes, want %d float64 values", len(b), n)
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		if math.IsNaN(v[i]) || math.IsInf(v[i], 0) {
			return nil, fmt.Errorf("value %d is %v", i, v[i])
		}
	}
	return v, nil
}

package gain

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas/blas64"
)

// withKernels runs f once per available kernel (portable, and AVX2 when the
// CPU has it).
func withKernels(t *testing.T, f func(t *testing.T)) {
	saved := useAVX
	defer func() { useAVX = saved }()
	kernels := []bool{false}
	if saved {
		kernels = append(kernels, true)
	}
	for _, avx := range kernels {
		useAVX = avx
		t.Run(fmt.Sprintf("avx=%v", avx), f)
	}
}

func randGeneral(rnd *rand.Rand, r, c, stride int) blas64.General {
	g := blas64.General{Rows: r, Cols: c, Stride: stride, Data: make([]float64, (r-1)*stride+c)}
	for i := range g.Data {
		g.Data[i] = rnd.NormFloat64()
	}
	return g
}

// TestMulABt checks the blocked kernel against the textbook triple loop on
// sizes that hit every edge: row/column remainders mod 3, inner lengths
// below, at and across the 4-wide SIMD step and the kcBlock chunk, column
// counts across ncBlock, padded strides, and accumulation.
func TestMulABt(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		for _, sz := range []struct{ m, n, k int }{
			{1, 1, 1}, {2, 5, 3}, {3, 3, 4}, {4, 7, 5}, {7, 50, 9},
			{10, 49, 257}, {31, 100, 513}, {64, 97, 130},
		} {
			for _, acc := range []bool{false, true} {
				rnd := rand.New(rand.NewPCG(uint64(sz.m*sz.n), uint64(sz.k)))
				a := randGeneral(rnd, sz.m, sz.k, sz.k+1)
				b := randGeneral(rnd, sz.n, sz.k, sz.k+3)
				c := randGeneral(rnd, sz.m, sz.n, sz.n+2)
				c0 := append([]float64(nil), c.Data...)
				mulABt(c, a, b, acc)
				for i := range sz.m {
					for j := range sz.n {
						var want, mag float64
						if acc {
							want = c0[i*c.Stride+j]
						}
						for l := range sz.k {
							p := a.Data[i*a.Stride+l] * b.Data[j*b.Stride+l]
							want += p
							mag += math.Abs(p)
						}
						if got := c.Data[i*c.Stride+j]; math.Abs(got-want) > 1e-14*(mag+1) {
							t.Fatalf("%v acc=%v: C[%d,%d] = %v, want %v", sz, acc, i, j, got, want)
						}
					}
				}
				// Padding between rows must be left alone.
				for i := range sz.m - 1 {
					for j := sz.n; j < c.Stride; j++ {
						if c.Data[i*c.Stride+j] != c0[i*c.Stride+j] {
							t.Fatalf("%v: padding C[%d,%d] modified", sz, i, j)
						}
					}
				}
			}
		}
	})
}

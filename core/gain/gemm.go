package gain

import (
	"fmt"
	"runtime"
	"sync"

	"gonum.org/v1/gonum/blas/blas64"
)

// Every product the gain needs can be written as C = A·Bᵀ with both A and B
// row-major, so the inner dimension is contiguous for both operands. That is
// the one shape implemented here, with a 3×3 register-blocked kernel
// (AVX2+FMA where available). gonum's pure-Go Dgemm reaches ~3 GFLOP/s per
// core on the benchmark machine, which puts K = 1000, d = 2048 at ~3 s; this
// kernel is several times faster.

const (
	kcBlock = 256 // inner-dimension chunk: 6 rows of it (12 KiB) stay in L1
	ncBlock = 48  // B rows per panel: 48×256×8 = 96 KiB stays in L2
)

// mulABt sets C = A·Bᵀ, or adds A·Bᵀ to C when acc is true. A is m×k, B is
// n×k and C is m×n. Rows of C are split over GOMAXPROCS goroutines for large
// products. Each element is summed in an order fixed by (m, n, k) alone, so
// the result does not depend on the number of goroutines.
func mulABt(c, a, b blas64.General, acc bool) {
	m, n, k := c.Rows, c.Cols, a.Cols
	if a.Rows != m || b.Rows != n || b.Cols != k {
		panic(fmt.Sprintf("gain: mulABt shapes C %d×%d, A %d×%d, B %d×%d",
			c.Rows, c.Cols, a.Rows, a.Cols, b.Rows, b.Cols))
	}
	if m == 0 || n == 0 {
		return
	}
	groups := (m + 2) / 3 // row groups of three; the last may be short
	workers := runtime.GOMAXPROCS(0)
	if flops := m * n * k; flops < 1<<17 {
		workers = 1 // goroutine start-up would dominate
	}
	workers = min(workers, groups)
	if workers <= 1 {
		mulABtRows(c, a, b, acc, 0, m)
		return
	}
	var wg sync.WaitGroup
	per := (groups + workers - 1) / workers
	for g0 := 0; g0 < groups; g0 += per {
		r0, r1 := 3*g0, min(3*(g0+per), m)
		wg.Go(func() { mulABtRows(c, a, b, acc, r0, r1) })
	}
	wg.Wait()
}

// mulABtRows computes rows [r0, r1) of mulABt; r0 is a multiple of 3.
func mulABtRows(c, a, b blas64.General, acc bool, r0, r1 int) {
	n, k := c.Cols, a.Cols
	if !acc {
		for i := r0; i < r1; i++ {
			clear(c.Data[i*c.Stride : i*c.Stride+n])
		}
	}
	arow := func(i, l0, l1 int) []float64 { return a.Data[i*a.Stride+l0 : i*a.Stride+l1] }
	brow := func(j, l0, l1 int) []float64 { return b.Data[j*b.Stride+l0 : j*b.Stride+l1] }
	var t [9]float64
	for l0 := 0; l0 < k; l0 += kcBlock {
		l1 := min(l0+kcBlock, k)
		for j0 := 0; j0 < n; j0 += ncBlock {
			j1 := min(j0+ncBlock, n)
			// A short last group of rows or columns repeats its last index
			// and discards the duplicate results: a redundant 3×3 kernel
			// call is still far cheaper than a scalar dot product.
			for i := r0; i < r1; i += 3 {
				ni := min(3, r1-i)
				a0 := arow(i, l0, l1)
				a1 := arow(i+min(1, ni-1), l0, l1)
				a2 := arow(i+ni-1, l0, l1)
				for j := j0; j < j1; j += 3 {
					nj := min(3, j1-j)
					dot3x3(&t, a0, a1, a2,
						brow(j, l0, l1), brow(j+min(1, nj-1), l0, l1), brow(j+nj-1, l0, l1))
					for r := range ni {
						ci := c.Data[(i+r)*c.Stride+j : (i+r)*c.Stride+j+nj]
						for s := range ci {
							ci[s] += t[3*r+s]
						}
					}
				}
			}
		}
	}
}

// dot3x3Go is the portable kernel: c[3r+s] = a_r·b_s.
func dot3x3Go(c *[9]float64, a0, a1, a2, b0, b1, b2 []float64) {
	n := len(a0)
	a1, a2, b0, b1, b2 = a1[:n], a2[:n], b0[:n], b1[:n], b2[:n]
	var c00, c01, c02, c10, c11, c12, c20, c21, c22 float64
	for l, x0 := range a0 {
		x1, x2 := a1[l], a2[l]
		y0, y1, y2 := b0[l], b1[l], b2[l]
		c00 += x0 * y0
		c01 += x0 * y1
		c02 += x0 * y2
		c10 += x1 * y0
		c11 += x1 * y1
		c12 += x1 * y2
		c20 += x2 * y0
		c21 += x2 * y1
		c22 += x2 * y2
	}
	*c = [9]float64{c00, c01, c02, c10, c11, c12, c20, c21, c22}
}

package gain

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/gonum/mat"
)

// Distribution writes into dst (empty or K×K) the mixup distribution P over
// class pairs (i, j) that policy derives from the K×K gain matrix G:
//
//   - SelMix, and Resample (which trains on its pairs unmixed):
//     softmax(s·G) over all K² entries with every entry whose gain
//     is not positive (G_ij ≤ 0, or NaN) set to 0 and the rest renormalised,
//     i.e. a softmax over the positive gains only. If no gain is positive,
//     P is uniform over all K² pairs.
//   - Uniform: P_ij = 1/K².
//   - Greedy: all mass on the largest gain (the first in row-major order on
//     ties; NaN gains are never chosen unless all are NaN, then (0, 0)).
//   - None, CSST, MiSLAS2 (the policies that do not Mix): P is all zeros
//     and does not sum to 1: no pair is ever drawn and fine-tuning uses the
//     policy's own loss. Samplers must check for it.
//
// Except for None, P is non-negative and sums to 1. The temperature s must
// be ≥ 0; +Inf spreads the mass evenly over the tied largest gains.
// Distribution panics if G is not square, dst has the wrong shape, s is
// negative or NaN, or the policy is unknown.
func Distribution(dst *mat.Dense, G mat.Matrix, s float64, policy Policy) {
	k, kc := G.Dims()
	if k != kc {
		panic(fmt.Sprintf("gain: G is %d×%d, not square", k, kc))
	}
	if !(s >= 0) {
		panic(fmt.Sprintf("gain: temperature s = %v, want ≥ 0", s))
	}
	if dst.IsEmpty() {
		dst.ReuseAs(k, k)
	} else if r, c := dst.Dims(); r != k || c != k {
		panic(fmt.Sprintf("gain: dst is %d×%d, want %d×%d", r, c, k, k))
	}
	raw := dst.RawMatrix()
	rowOf := func(i int) []float64 { return raw.Data[i*raw.Stride : i*raw.Stride+k] }
	fill := func(v float64) {
		for i := range k {
			row := rowOf(i)
			for j := range row {
				row[j] = v
			}
		}
	}

	switch policy {
	case None, CSST, MiSLAS2:
		fill(0)
	case Uniform:
		fill(1 / float64(k*k))
	case Greedy:
		bi, bj := argmax(G)
		fill(0)
		dst.Set(bi, bj, 1)
	case SelMix, Resample:
		bi, bj := argmax(G)
		gmax := G.At(bi, bj)
		if !(gmax > 0) {
			fill(1 / float64(k*k))
			return
		}
		// Shift by the largest gain: every exponent is ≤ 0 and the argmax
		// contributes exactly 1, so the sum is in [1, K²] whatever s and G
		// are. The argmax is pinned to 0 explicitly because s·0 is NaN for
		// s = +Inf. G_ij − gmax cannot overflow as both are in (0, gmax].
		var sum float64
		for i := range k {
			row := rowOf(i)
			for j := range row {
				g := G.At(i, j)
				switch {
				case !(g > 0):
					row[j] = 0
				case g == gmax:
					row[j] = 1
				default:
					row[j] = math.Exp(s * (g - gmax))
				}
				sum += row[j]
			}
		}
		inv := 1 / sum
		for i := range k {
			row := rowOf(i)
			for j := range row {
				row[j] *= inv
			}
		}
	default:
		panic(fmt.Sprintf("gain: unknown policy %q", string(policy)))
	}
}

// argmax returns the position of the largest non-NaN entry of G, the first
// in row-major order on ties, or (0, 0) if every entry is NaN.
func argmax(G mat.Matrix) (bi, bj int) {
	r, c := G.Dims()
	best := math.NaN()
	for i := range r {
		for j := range c {
			if v := G.At(i, j); v > best || (math.IsNaN(best) && !math.IsNaN(v)) {
				best, bi, bj = v, i, j
			}
		}
	}
	return bi, bj
}

// Norm says how G is scaled before P = softmax(s·G).
type Norm string

const (
	// NormNone takes G as it is.
	NormNone Norm = "none"
	// NormMax divides G by max|G| first (the paper's analysis assumes
	// |G_ij| ≤ 1), so that s means the same whatever the scale of the
	// features and of ψ.
	NormMax Norm = "max"
)

// ParseNorm parses "none" or "max".
func ParseNorm(s string) (Norm, error) {
	switch n := Norm(strings.ToLower(strings.TrimSpace(s))); n {
	case NormNone, NormMax:
		return n, nil
	}
	return "", fmt.Errorf("gain: unknown normalisation %q (want none or max)", s)
}

// Normalized returns G as the softmax sees it under n: G itself, or a new
// matrix G/max|G| (infinite entries aside; an all-zero or NaN maximum
// leaves G as it is).
func Normalized(G *mat.Dense, n Norm) *mat.Dense {
	if n != NormMax {
		return G
	}
	m := 0.0
	for _, v := range G.RawMatrix().Data {
		if a := math.Abs(v); a > m && !math.IsInf(a, 0) {
			m = a
		}
	}
	if m == 0 || math.IsNaN(m) {
		return G
	}
	var out mat.Dense
	out.Scale(1/m, G)
	return &out
}

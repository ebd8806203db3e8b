// Package data loads and prepares the datasets selmix fine-tunes on: the
// built-in Fashion-MNIST (LeCun IDX files), long-tailed splits of it
// (docs/method.md), researchers' own features exported as .npy/.npz, and a compact
// checksummed binary format for embedding a prepared split in the binary.
//
// Every loader treats its input as untrusted: malformed, truncated or
// inconsistent data yields an error naming the file (or stream), the array
// or key, and the offending index; it never panics and never lets NaN or Inf
// through.
package data

import "fmt"

// Set is a dense dataset: X is N×Dim row-major float32, Y labels in [0,K).
// In an unlabeled set a label of -1 means "unknown".
type Set struct {
	X      []float32
	Y      []int
	N, Dim int
}

// Row returns sample i as a slice aliasing s.X (capacity clipped to Dim, so
// appending to it never overwrites the next row).
func (s *Set) Row(i int) []float32 {
	return s.X[i*s.Dim : (i+1)*s.Dim : (i+1)*s.Dim]
}

// ClassIndex returns, for every class in [0,K), the indices of its samples
// in increasing order. Labels outside [0,K) (such as -1, unknown) are
// skipped.
func (s *Set) ClassIndex(K int) [][]int {
	idx := make([][]int, K)
	for i, y := range s.Y {
		if y >= 0 && y < K {
			idx[y] = append(idx[y], i)
		}
	}
	return idx
}

// Counts returns the number of samples per class in [0,K); labels outside
// that range are not counted.
func (s *Set) Counts(K int) []int {
	c := make([]int, K)
	for _, y := range s.Y {
		if y >= 0 && y < K {
			c[y]++
		}
	}
	return c
}

// subset returns a new Set holding copies of the rows idx, in that order.
func (s *Set) subset(idx []int) Set {
	out := Set{
		X:   make([]float32, 0, len(idx)*s.Dim),
		Y:   make([]int, 0, len(idx)),
		N:   len(idx),
		Dim: s.Dim,
	}
	for _, i := range idx {
		out.X = append(out.X, s.Row(i)...)
		out.Y = append(out.Y, s.Y[i])
	}
	return out
}

// shapeErr reports whether the slices of s agree with N and Dim.
func (s *Set) shapeErr() error {
	if s.N < 0 || s.Dim < 0 {
		return fmt.Errorf("negative shape N=%d Dim=%d", s.N, s.Dim)
	}
	if len(s.Y) != s.N {
		return fmt.Errorf("len(Y)=%d but N=%d", len(s.Y), s.N)
	}
	if s.Dim > 0 && s.N > maxElems/s.Dim || len(s.X) != s.N*s.Dim {
		return fmt.Errorf("len(X)=%d but N×Dim=%d×%d", len(s.X), s.N, s.Dim)
	}
	return nil
}

// checkLabels verifies every label lies in [lo,K); lo is 0 for labeled
// sets and -1 for unlabeled ones.
func (s *Set) checkLabels(K, lo int) error {
	for i, y := range s.Y {
		if y < lo || y >= K {
			return fmt.Errorf("label %d at index %d outside [%d,%d)", y, i, lo, K)
		}
	}
	return nil
}

// maxElems bounds any single array so a forged header cannot make us
// allocate without limit (1<<31 float32 is 8 GiB).
const maxElems = 1 << 31

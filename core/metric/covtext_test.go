package metric

import (
	"math"
	"testing"
)

// A coverage printed beside its bound reads on its own side of it: more
// decimals where those asked for would round it across or onto the bound.
func TestCoverageText(t *testing.T) {
	for _, tc := range []struct {
		name     string
		c, bound float64
		dec      int
		want     string
	}{
		{"far below", 0.082, 0.095, 3, "0.082"},
		{"below, rounds to the bound", 0.0946, 0.095, 3, "0.0946"},
		{"below by less", 0.09496, 0.095, 3, "0.09496"},
		{"below, rounds to the bound at 4", 0.09496, 0.095, 4, "0.09496"},
		{"at the bound", 0.095, 0.095, 3, "0.095"},
		{"within 1e-9: met", 0.095 - 5e-10, 0.095, 3, "0.095"},
		{"above, rounds to the bound", 0.0951, 0.095, 3, "0.095"},
		{"met, 4 decimals round below (K = 1000)", 0.00095, 0.00095, 4, "0.00095"},
		{"missed, 4 decimals already below (K = 1000)", 0.00094, 0.00095, 4, "0.0009"},
		{"just below, many decimals", 0.095 - 2e-9, 0.095, 3, "0.094999998"},
		{"NaN", math.NaN(), 0.095, 3, "NaN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CoverageText(tc.c, tc.bound, tc.dec); got != tc.want {
				t.Errorf("CoverageText(%v, %v, %d) = %q, want %q", tc.c, tc.bound, tc.dec, got, tc.want)
			}
		})
	}
}

func TestBoundText(t *testing.T) {
	for _, tc := range []struct {
		b    float64
		want string
	}{
		{0.095, "0.0950"}, {0.0095, "0.0095"}, {0.00095, "0.00095"}, {0.2, "0.2000"}, {0.95 / 7, "0.1357"},
	} {
		if got := BoundText(tc.b); got != tc.want {
			t.Errorf("BoundText(%v) = %q, want %q", tc.b, got, tc.want)
		}
	}
}

package plugin

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The radix sort orders offsets as the comparison sort does, negative,
// zero, tied and far apart alike.
func TestSortEvents(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, n := range []int{0, 1, 2, 7, 1000, 5000} {
		ev := make([]event, n)
		for i := range ev {
			s := rng.NormFloat64() * math.Pow(10, float64(rng.IntN(7)-3))
			switch rng.IntN(5) {
			case 0:
				s = float64(rng.IntN(3) - 1) // ties, and zero
			case 1:
				s = -s
			}
			ev[i] = event{s: s, i: int32(i)}
		}
		want := slices.Clone(ev)
		slices.SortStableFunc(want, func(a, b event) int { return cmpF(a.s, b.s) })
		var so sorter
		got := so.sort(slices.Clone(ev))
		for i := range got {
			if got[i].s != want[i].s {
				t.Fatalf("n = %d: position %d holds %v, want %v", n, i, got[i].s, want[i].s)
			}
		}
		// LSD radix sort is stable: ties keep their order.
		for i := 1; i < n; i++ {
			if got[i].s == got[i-1].s && got[i].i < got[i-1].i && sortKey(got[i].s) == sortKey(got[i-1].s) {
				t.Fatalf("n = %d: ties out of order at %d", n, i)
			}
		}
	}
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

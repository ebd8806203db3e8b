package plugin

import "math"

// The radix sort's digits: six of 11 bits cover a 64-bit key.
const (
	digitBits = 11
	digits    = (64 + digitBits - 1) / digitBits
	buckets   = 1 << digitBits
)

// sorter sorts a move's events by offset with a least-significant-digit
// radix sort on the bits of the offsets, O(n) where a comparison sort
// would dominate a coordinate's scan.
type sorter struct {
	hist [digits][buckets]int
	buf  []event
}

// sort sorts ev by offset, skipping the passes whose digit every event
// shares, and returns the sorted events, in ev or in the sorter's buffer.
// Equal offsets end up adjacent (−0 just below +0), which is all the walk
// needs; the sort is stable.
func (so *sorter) sort(ev []event) []event {
	n := len(ev)
	if n == 0 {
		return ev
	}
	if cap(so.buf) < n {
		so.buf = make([]event, n)
	}
	h := &so.hist
	*h = [digits][buckets]int{}
	for _, e := range ev {
		k := sortKey(e.s)
		for d := range digits {
			h[d][(k>>(digitBits*d))&(buckets-1)]++
		}
	}
	src, dst := ev, so.buf[:n]
	first := sortKey(ev[0].s)
	for d := range digits {
		hd := &h[d]
		if hd[(first>>(digitBits*d))&(buckets-1)] == n {
			continue
		}
		sum := 0
		for b, c := range hd {
			hd[b] = sum
			sum += c
		}
		for _, e := range src {
			b := (sortKey(e.s) >> (digitBits * d)) & (buckets - 1)
			dst[hd[b]] = e
			hd[b]++
		}
		src, dst = dst, src
	}
	return src
}

// sortKey maps a float64 to a uint64 of the same order.
func sortKey(s float64) uint64 {
	u := math.Float64bits(s)
	if u>>63 == 1 {
		return ^u
	}
	return u | 1<<63
}

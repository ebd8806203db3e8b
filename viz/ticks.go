package viz

import (
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
)

// niceTicks places about want labelled ticks at multiples of 1, 2 or 5
// times a power of ten, every label with the same number of decimals
// (0, 0.5, 1 reads "0.0 0.5 1.0"; gonum's default gave "0.099 0.096
// 0.093 0.09"), with four or five unlabelled ticks between. Each of refs
// within the range is labelled too, so a reference line (the ratio 1 of
// the linear-step panel) is always named.
type niceTicks struct {
	want int
	refs []float64
}

// maxTicks bounds the ticks one axis gets, whatever range it is handed.
const maxTicks = 200

// pointTol is the relative width below which a range is a point: a curve
// flat but for rounding (its ends one ulp apart) is drawn as flat, not
// magnified a quadrillion times (issue 43: one such axis asked for 10¹⁶
// ticks and an export grew to 24 GB).
const pointTol = 1e-9

// pointRange reports whether [lo, hi] is a point for drawing: empty,
// inverted, not finite, or narrower than pointTol of its magnitude.
func pointRange(lo, hi float64) bool {
	w := hi - lo
	return !(w > 0) || math.IsInf(w, 0) || w <= pointTol*math.Max(math.Abs(lo), math.Abs(hi))
}

// widen is the range an axis over [lo, hi] draws: finite ends at least
// pointTol of their magnitude apart; a point v becomes v ± 5 % (± 0.05
// about 0), an infinite or NaN end 0 or 1, an inverted range [0, 1], and a range too wide for its
// width to be a float64 the largest one that is.
func widen(lo, hi float64) (float64, float64) {
	if math.IsNaN(lo) || math.IsInf(lo, 0) {
		lo = 0
	}
	if math.IsNaN(hi) || math.IsInf(hi, 0) {
		hi = math.Max(lo, 1)
	}
	if lo > hi {
		return 0, 1 // nothing to draw
	}
	if math.IsInf(hi-lo, 0) {
		return -math.MaxFloat64 / 4, math.MaxFloat64 / 4
	}
	if pointRange(lo, hi) {
		v := lo/2 + hi/2
		d := math.Max(math.Abs(v)*0.05, 0.05)
		return v - d, v + d
	}
	return lo, hi
}

// Ticks implements plot.Ticker. It returns at most maxTicks ticks.
func (t niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if pointRange(lo, hi) {
		lo, hi = widen(lo, hi)
	}
	step, minor := niceStep((hi - lo) / float64(max(t.want, 2)))
	ms := step / float64(minor)
	first := math.Ceil(lo/ms - 1e-9)
	// Counted in integers, so the count must stay where float64 holds
	// them exactly, and small.
	if n := (hi-lo)/ms + 1; !(n <= maxTicks) || math.Abs(first)+n > 1<<52 {
		return boundTicks(plot.DefaultTicks{}.Ticks(lo, hi))
	}
	dec := max(0, -int(math.Floor(math.Log10(step)+1e-9)))
	label := func(v float64) string {
		s := strconv.FormatFloat(v, 'f', dec, 64)
		if z, err := strconv.ParseFloat(s, 64); err == nil && z == 0 {
			s = strconv.FormatFloat(0, 'f', dec, 64) // never "-0.0"
		}
		return s
	}
	var out []plot.Tick
	// Ticks are whole multiples of the minor step, counted in integers so
	// that 0.1 + 0.2 never drifts into a label.
	for k := first; k*ms <= hi+ms*1e-9 && len(out) < maxTicks; k++ {
		v := k * ms
		if math.Mod(k, float64(minor)) == 0 {
			out = append(out, plot.Tick{Value: v, Label: label(v)})
		} else {
			out = append(out, plot.Tick{Value: v})
		}
	}
	for _, r := range t.refs {
		if r < lo || r > hi {
			continue
		}
		i := slices.IndexFunc(out, func(tk plot.Tick) bool { return math.Abs(tk.Value-r) < ms*1e-6 })
		lab := strconv.FormatFloat(r, 'f', -1, 64)
		if dec > 0 {
			lab = label(r)
		}
		if i >= 0 {
			out[i].Label = lab
		} else {
			out = append(out, plot.Tick{Value: r, Label: lab})
		}
	}
	return out
}

// boundTicks keeps at most maxTicks of ts, labelled ones first.
func boundTicks(ts []plot.Tick) []plot.Tick {
	if len(ts) <= maxTicks {
		return ts
	}
	out := make([]plot.Tick, 0, maxTicks)
	for _, tk := range ts {
		if tk.Label != "" && len(out) < maxTicks {
			out = append(out, tk)
		}
	}
	return out
}

// niceStep is the smallest of 1, 2, 5 × 10ᵏ at least raw, and how many
// minor intervals divide it.
func niceStep(raw float64) (step float64, minor int) {
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []struct {
		f     float64
		minor int
	}{{1, 5}, {2, 4}, {5, 5}, {10, 5}} {
		if m.f*mag >= raw*(1-1e-9) {
			return m.f * mag, m.minor
		}
	}
	return 10 * mag, 5
}

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

// Ticks implements plot.Ticker.
func (t niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	step, minor := niceStep((hi - lo) / float64(max(t.want, 2)))
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
	ms := step / float64(minor)
	for k := math.Ceil(lo/ms - 1e-9); k*ms <= hi+ms*1e-9; k++ {
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

package viz

import (
	"math"
	"reflect"
	"testing"
)

func labels(t niceTicks, lo, hi float64) []string {
	var out []string
	for _, tk := range t.Ticks(lo, hi) {
		if tk.Label != "" {
			out = append(out, tk.Label)
		}
	}
	return out
}

// Labels sit at 1, 2 or 5 × 10ᵏ, all with the same decimals; a reference
// value is always labelled (issue 26: the ratio panel read "−1 2 5",
// metrics "0.099 0.096 0.093 0.09").
func TestNiceTicks(t *testing.T) {
	for _, c := range []struct {
		name   string
		t      niceTicks
		lo, hi float64
		want   []string
	}{
		{"unit", niceTicks{want: 5}, 0, 1, []string{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"}},
		{"coverage", niceTicks{want: 4}, 0.0885, 0.0995, []string{"0.090", "0.095"}},
		{"small range", niceTicks{want: 5}, 0.09, 0.1, []string{"0.090", "0.092", "0.094", "0.096", "0.098", "0.100"}},
		{"steps", niceTicks{want: 5}, 0, 200, []string{"0", "50", "100", "150", "200"}},
		{"ratio", niceTicks{want: 4, refs: []float64{0, 1}}, -1.3, 5.2, []string{"0", "1", "2", "4"}},
		{"ratio, coarse", niceTicks{want: 3, refs: []float64{0, 1}}, -1, 9, []string{"0", "1", "5"}},
		{"ratio without refs", niceTicks{want: 4}, -1.3, 5.2, []string{"0", "2", "4"}},
		{"negative", niceTicks{want: 4}, -0.4, -0.05, []string{"-0.4", "-0.3", "-0.2", "-0.1"}},
		{"crosses zero", niceTicks{want: 4}, -0.03, 0.05, []string{"-0.02", "0.00", "0.02", "0.04"}},
	} {
		if got := labels(c.t, c.lo, c.hi); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s [%g, %g]: labels %q, want %q", c.name, c.lo, c.hi, got, c.want)
		}
	}
	// Unlabelled minor ticks fall between the labelled ones.
	ts := niceTicks{want: 5}.Ticks(0, 1)
	if len(ts) != 21 {
		t.Errorf("[0, 1]: %d ticks, want 21 (6 labelled, 3 minor in each of 5 intervals of 0.2)", len(ts))
	}
}

// compare-final draws coverages on an axis of their own (issue 26: min
// coverage, ≤ 0.1, was drawn on recall's 0–1 axis).
func TestCompareFinalAxes(t *testing.T) {
	ms := append([]Metric{ObjectiveMetric("min-recall")}, ReportedMetrics()...)
	recall, coverage := byAxis(ms)
	var names []string
	for _, j := range coverage {
		names = append(names, ms[j].Name)
	}
	if want := []string{"min_coverage", "min_ht_coverage"}; !reflect.DeepEqual(names, want) {
		t.Errorf("coverage axis holds %v, want %v", names, want)
	}
	if len(recall)+len(coverage) != len(ms) || ms[recall[0]].Name != "psi:min-recall" {
		t.Errorf("recall axis %v", recall)
	}
}

// No axis can run away (issue 43: a metrics curve whose ends were one ulp
// apart asked for about 10¹⁶ ticks and an export grew to 24 GB): a range
// narrower than pointTol of its magnitude is a point, and every range —
// adjacent doubles, NaN, ±Inf, 1e300 wide — gets at most maxTicks ticks,
// all finite.
func TestNiceTicksBounded(t *testing.T) {
	lo := math.Float64frombits(0x3fe0e3bcd35a8588) // the two values
	hi := math.Float64frombits(0x3fe0e3bcd35a8589)
	inf, nan := math.Inf(1), math.NaN()
	for _, c := range []struct {
		name   string
		lo, hi float64
	}{
		{"adjacent doubles", lo, hi},
		{"equal", lo, lo},
		{"adjacent about 0", 0, math.SmallestNonzeroFloat64},
		{"adjacent, huge", 1e300, math.Nextafter(1e300, inf)},
		{"1e300 wide", 0, 1e300},
		{"wider than a float64", -math.MaxFloat64, math.MaxFloat64},
		{"NaN low", nan, 1},
		{"NaN high", 0, nan},
		{"both NaN", nan, nan},
		{"+Inf", 0, inf},
		{"-Inf", -inf, 0},
		{"infinite", -inf, inf},
		{"inverted", 1, 0},
		{"tiny but real", 1e-12, 3e-12},
	} {
		for _, want := range []int{0, 4, 5, 1 << 30} {
			ts := niceTicks{want: want, refs: []float64{0, 1}}.Ticks(c.lo, c.hi)
			if len(ts) > maxTicks {
				t.Errorf("%s [%g, %g] want %d: %d ticks, more than %d", c.name, c.lo, c.hi, want, len(ts), maxTicks)
			}
			for _, tk := range ts {
				if math.IsNaN(tk.Value) || math.IsInf(tk.Value, 0) {
					t.Errorf("%s [%g, %g]: tick at %g", c.name, c.lo, c.hi, tk.Value)
				}
			}
		}
	}
	// A point is drawn as one: about 5 labelled ticks around it, the value
	// among them at the precision the axis shows.
	got := labels(niceTicks{want: 4}, lo, hi)
	if len(got) < 2 || len(got) > 6 {
		t.Errorf("adjacent doubles: labels %q, want a handful around 0.528", got)
	}
	// A real narrow range keeps its own ticks: 1e-12 to 3e-12 is no point.
	if got := labels(niceTicks{want: 4}, 1e-12, 3e-12); len(got) < 2 || got[0] == got[len(got)-1] {
		t.Errorf("[1e-12, 3e-12]: labels %q", got)
	}
}

func TestWiden(t *testing.T) {
	lo := math.Float64frombits(0x3fe0e3bcd35a8588)
	hi := math.Float64frombits(0x3fe0e3bcd35a8589)
	for _, c := range []struct {
		name           string
		lo, hi         float64
		wantLo, wantHi float64
	}{
		{"a real range is kept", 0.09, 0.1, 0.09, 0.1},
		{"equal", 2, 2, 1.9, 2.1},
		{"zero", 0, 0, -0.05, 0.05},
		{"NaN and Inf", math.NaN(), math.Inf(1), 0, 1},
		{"inverted", 3, 1, 0, 1},
		{"too wide", -math.MaxFloat64, math.MaxFloat64, -math.MaxFloat64 / 4, math.MaxFloat64 / 4},
	} {
		gl, gh := widen(c.lo, c.hi)
		if math.Abs(gl-c.wantLo) > 1e-12*math.Max(1, math.Abs(c.wantLo)) || math.Abs(gh-c.wantHi) > 1e-12*math.Max(1, math.Abs(c.wantHi)) {
			t.Errorf("%s: widen(%g, %g) = [%g, %g], want [%g, %g]", c.name, c.lo, c.hi, gl, gh, c.wantLo, c.wantHi)
		}
	}
	gl, gh := widen(lo, hi)
	if mid := lo/2 + hi/2; math.Abs(gl-(mid-0.05)) > 1e-15 || math.Abs(gh-(mid+0.05)) > 1e-15 {
		t.Errorf("adjacent doubles widen to [%v, %v], want the midpoint ± 0.05", gl, gh)
	}
}

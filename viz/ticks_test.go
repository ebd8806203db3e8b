package viz

import (
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

package curves

import (
	"math"
	"testing"

	"selmix/core/metric"
	"selmix/tui/internal/fixture"
	"selmix/tui/runstate"
)

func TestView(t *testing.T) {
	fixture.Cases(t, New, fixture.Golden, []fixture.Case{
		{Name: "waiting", Run: runstate.New(fixture.Info(10)), W: 50, H: 4},
		{Name: "stacked", Run: fixture.Run(10, 12), W: 78, H: 19},
		{Name: "side", Run: fixture.Run(10, 12), W: 120, H: 14},
		{Name: "other-objective-raw", Run: fixture.Run(10, 12), W: 120, H: 14,
			Keys: []string{"j", "j", "[", "[", "[", "[", "[", "[", "["}},
		{Name: "table-only", Run: fixture.Run(10, 12), W: 60, H: 11},
		// The size the workbench gives the pane at 120×36: every
		// objective's row beside the chart.
		{Name: "side-120x36", Run: fixture.Run(10, 12), W: 118, H: TableRows()},
	})
}

func TestEMA(t *testing.T) {
	cases := []struct {
		name string
		v    []float64
		a    float64
		want []float64
	}{
		{"raw", []float64{1, 2, 3}, 0, []float64{1, 2, 3}},
		{"half", []float64{0, 1, 1}, 0.5, []float64{0, 0.5, 0.75}},
		{"empty", nil, 0.5, []float64{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := EMA(c.v, c.a)
			if len(got) != len(c.want) {
				t.Fatalf("EMA(%v, %g) = %v, want %v", c.v, c.a, got, c.want)
			}
			for i := range got {
				if math.Abs(got[i]-c.want[i]) > 1e-12 {
					t.Errorf("EMA(%v, %g) = %v, want %v", c.v, c.a, got, c.want)
				}
			}
		})
	}
}

func TestSmoothingBounds(t *testing.T) {
	m := New(fixture.Plain(), runstate.New(fixture.Info(10)))
	for range 20 {
		fixture.Press(m, "]")
	}
	if got := m.Smoothing(); got != 0.95 {
		t.Errorf("smoothing after many ] = %g, want 0.95", got)
	}
	for range 20 {
		fixture.Press(m, "[")
	}
	if got := m.Smoothing(); got != 0 {
		t.Errorf("smoothing after many [ = %g, want 0", got)
	}
}

func TestLinearView(t *testing.T) {
	noPred := func(K, n int) *runstate.State {
		r := runstate.New(fixture.Info(K))
		for i := range n {
			s := fixture.Refresh(K, i, 2000, metric.MinRecall)
			rs := *s.Refresh
			rs.Predicted, rs.Realised = nil, nil
			s.Refresh = &rs
			r.Apply(s)
		}
		return r
	}
	// Ratios beyond the scale are clipped with their tip marked; a zero
	// prediction has no ratio.
	clipped := func() *runstate.State {
		r := runstate.New(fixture.Info(10))
		for i, pr := range [][2]float64{{0, 0}, {0.01, 0.05}, {0.01, -0.07}, {0, 0.01}, {0.02, 0.02}, {0.02, -0.01}} {
			s := fixture.Refresh(10, i, 2000, metric.MinRecall)
			rs := *s.Refresh
			rs.Predicted, rs.Realised = &pr[0], &pr[1]
			if i == 0 {
				rs.Predicted, rs.Realised = nil, nil
			}
			s.Refresh = &rs
			r.Apply(s)
		}
		return r
	}
	linear := []string{"v"}
	fixture.Cases(t, New, fixture.GoldenTitled, []fixture.Case{
		{Name: "waiting", Run: runstate.New(fixture.Info(10)), W: 50, H: 4, Keys: linear},
		{Name: "clipped", Run: clipped(), W: 78, H: 16, Keys: linear},
		{Name: "first-refresh", Run: fixture.Run(10, 1), W: 78, H: 17, Keys: linear},
		{Name: "stacked", Run: fixture.Run(10, 12), W: 78, H: 17, Keys: linear},
		{Name: "side", Run: fixture.Run(10, 12), W: 120, H: 14, Keys: linear},
		{Name: "small", Run: fixture.Run(10, 12), W: 60, H: 7, Keys: linear},
		{Name: "recorded-before", Run: noPred(10, 5), W: 78, H: 10, Keys: linear},
		{Name: "k1000", Run: fixture.Run(1000, 4), W: 100, H: 13, Keys: linear},
	})
}

package curves

import (
	"math"
	"testing"

	"github.com/charmbracelet/x/exp/golden"

	"selmix/core/metric"
	"selmix/tui/history"
	"selmix/tui/internal/fixture"
)

func TestView(t *testing.T) {
	cases := []struct {
		name string
		run  *history.Run
		w, h int
		keys []string
	}{
		{"waiting", history.New(fixture.Info(10)), 50, 4, nil},
		{"stacked", fixture.Apply(fixture.Info(10), fixture.Running(10, 12)), 78, 19, nil},
		{"side", fixture.Apply(fixture.Info(10), fixture.Running(10, 12)), 120, 14, nil},
		{"other-objective-raw", fixture.Apply(fixture.Info(10), fixture.Running(10, 12)), 120, 14,
			[]string{"j", "j", "[", "[", "[", "[", "[", "[", "["}},
		{"table-only", fixture.Apply(fixture.Info(10), fixture.Running(10, 12)), 60, 11, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fixture.Golden(t, New(fixture.Plain(), c.run), c.w, c.h, c.keys...)
		})
	}
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
	m := New(fixture.Plain(), history.New(fixture.Info(10)))
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
	noPred := func(K, n int) *history.Run {
		r := history.New(fixture.Info(K))
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
	clipped := func() *history.Run {
		r := history.New(fixture.Info(10))
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
	cases := []struct {
		name string
		run  *history.Run
		w, h int
	}{
		{"waiting", history.New(fixture.Info(10)), 50, 4},
		{"clipped", clipped(), 78, 16},
		{"first-refresh", fixture.Apply(fixture.Info(10), fixture.Running(10, 1)), 78, 17},
		{"stacked", fixture.Apply(fixture.Info(10), fixture.Running(10, 12)), 78, 17},
		{"side", fixture.Apply(fixture.Info(10), fixture.Running(10, 12)), 120, 14},
		{"small", fixture.Apply(fixture.Info(10), fixture.Running(10, 12)), 60, 7},
		{"recorded-before", noPred(10, 5), 78, 10},
		{"k1000", fixture.Apply(fixture.Info(1000), fixture.Running(1000, 4)), 100, 13},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := New(fixture.Plain(), c.run)
			v := fixture.View(t, m, c.w, c.h, "v")
			golden.RequireEqual(t, m.Title()+"\n"+v)
		})
	}
}

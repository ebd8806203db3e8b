package multipliers

import (
	"strings"
	"testing"

	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/tui/internal/fixture"
	"selmix/tui/runstate"
)

func TestView(t *testing.T) {
	var noLambda []loop.Snapshot
	for i := range 3 {
		noLambda = append(noLambda, fixture.Refresh(10, i, 2000, metric.MeanRecall))
	}
	fixture.Cases(t, New, fixture.Golden, []fixture.Case{
		{Name: "waiting", Run: runstate.New(fixture.Info(10)), W: 50, H: 4},
		{Name: "min-recall", Run: fixture.Run(10, 8), W: 78, H: 14},
		{Name: "no-multipliers", Run: fixture.Apply(fixture.Info(10), noLambda), W: 60, H: 5},
		{Name: "k100-cut", Run: fixture.Run(100, 3), W: 60, H: 8},
	})
}

// Per-class multipliers at K = 1000 sort and search like the classes
// pane; head and tail multipliers do not.
func TestViewK1000(t *testing.T) {
	run := fixture.Run(1000, 3)
	fixture.Cases(t, New, fixture.GoldenTitled, []fixture.Case{
		{Name: "worst-first", Run: run, W: 70, H: 8},
		{Name: "by-class", Run: run, W: 70, H: 8, Keys: []string{"r", "r", "r", "r", "r"}},
		{Name: "prompt", Run: run, W: 70, H: 8, Keys: []string{"/", "7", "7"}},
		{Name: "found", Run: run, W: 70, H: 8, Keys: []string{"/", "7", "7", "7", "enter"}},
	})
}

func TestHeadTailDoesNotSort(t *testing.T) {
	s := fixture.Refresh(100, 1, 2000, metric.MinHTRecall)
	rs := *s.Refresh
	rs.Lambda = []float64{0.2, 0.8}
	s.Refresh = &rs
	m := New(fixture.Plain(), fixture.Apply(fixture.Info(100), []loop.Snapshot{s}))
	v := fixture.View(t, m, 60, 5, "r", "/")
	if m.Capturing() || m.Title() != "s and λ" {
		t.Errorf("head/tail multipliers: capturing %v, title %q; want no sort and no search", m.Capturing(), m.Title())
	}
	if !strings.Contains(v, "head ") || !strings.Contains(v, "tail ") {
		t.Errorf("view does not list head and tail:\n%s", v)
	}
}

package classes

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/tui/internal/fixture"
	"selmix/tui/pane"
	"selmix/tui/runstate"
)

func TestView(t *testing.T) {
	fixture.Cases(t, New, fixture.Golden, []fixture.Case{
		{Name: "waiting", Run: runstate.New(fixture.Info(10)), W: 60, H: 5},
		{Name: "k10-narrow", Run: fixture.Run(10, 6), W: 78, H: 17},
		{Name: "k10-wide", Run: fixture.Run(10, 6), W: 100, H: 14},
		{Name: "k10-first-refresh", Run: fixture.Run(10, 1), W: 78, H: 14},
		{Name: "k100-scrolled", Run: fixture.Run(100, 3), W: 78, H: 12, Keys: []string{"j", "j", "j"}},
		{Name: "k10-near-bound", Run: nearBound(), W: 78, H: 14},
		// With a margin the top line says what the multipliers aim at
		// (issue 46: the aims α/K + δ_j were shown nowhere).
		{Name: "k10-aims", Run: aimed(), W: 110, H: 6},
		{Name: "k10-aims-70", Run: aimed(), W: 70, H: 4},
	})
}

// aimed is fixture.Running(10, 6) optimizing mean-recall@cov with the
// margin auto, its last refresh aiming at 0.0962–0.0998.
func aimed() *runstate.State {
	snaps := fixture.Running(10, 6)
	for i := range snaps {
		snaps[i].Hyper.Objective, snaps[i].Hyper.CovMargin = metric.MeanRecallCov, loop.MarginAuto
	}
	rs := snaps[len(snaps)-1].Refresh
	rs.Aims = make([]float64, 10)
	for j := range rs.Aims {
		rs.Aims[j] = 0.0962 + 0.0004*float64(j)
	}
	return fixture.Apply(fixture.Info(10), snaps)
}

// nearBound is fixture.Run(10, 6) with coverages just below α/K = 0.095
// (0.0946, 0.09496), which three decimals would show as 0.095, and one at
// it: those below show more decimals, beside their flag.
func nearBound() *runstate.State {
	snaps := fixture.Running(10, 6)
	rep := &snaps[len(snaps)-1].Refresh.Report
	rep.Coverage[1], rep.Coverage[2], rep.Coverage[3] = 0.0946, 0.09496, 0.095
	return fixture.Apply(fixture.Info(10), snaps)
}

func TestScrollClamps(t *testing.T) {
	m := New(fixture.Plain(), fixture.Run(100, 2))
	m.SetSize(60, 12)
	for range 500 {
		fixture.Press(m, "j")
	}
	if want := 100 - 10; m.Scroll.Offset(100, m.Rows()) != want {
		t.Errorf("offset after scrolling past the end = %d, want %d", m.Scroll.Offset(100, m.Rows()), want)
	}
	if got, want := m.Title(), "classes 91–100 of 100 · by recall ↑"; got != want {
		t.Errorf("Title() = %q, want %q", got, want)
	}
}

// K = 1000: the title shows the order and the window, the prompt replaces
// the first header line, and a found class is marked ».
func TestViewK1000(t *testing.T) {
	run := fixture.Run(1000, 3)
	fixture.Cases(t, New, fixture.GoldenTitled, []fixture.Case{
		{Name: "worst-first", Run: run, W: 100, H: 14},
		{Name: "by-count-narrow", Run: run, W: 78, H: 12, Keys: []string{"r", "r"}},
		{Name: "by-gain", Run: run, W: 100, H: 12, Keys: []string{"r", "r", "r"}},
		{Name: "prompt", Run: run, W: 78, H: 8, Keys: []string{"/", "c", "l", "a", "s", "s", " ", "1", "2"}},
		{Name: "found", Run: run, W: 78, H: 8, Keys: []string{"/", "1", "2", "enter"}},
		{Name: "found-near-the-end", Run: run, W: 78, H: 8, Keys: []string{"r", "r", "r", "r", "r", "/", "9", "9", "8", "enter"}},
	})
}

// rowsShown are the classes of the rows on screen, read back from the
// view ("class N" names).
func rowsShown(t *testing.T, v string) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(v, "\n")[2:] {
		if f := strings.Fields(strings.TrimLeft(l, "▶» ")); len(f) >= 2 && f[0] == "class" {
			out = append(out, f[1])
		}
	}
	return out
}

// Sorting and jumping change what is on screen: worst first shows the
// lowest recalls, a jump scrolls the found class to the top row.
func TestSortAndJump(t *testing.T) {
	run := fixture.Run(1000, 2)
	m := New(fixture.Plain(), run)
	v := fixture.View(t, m, 78, 8)
	rec := run.Cur.Report.Recall
	order := make([]int, 1000)
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case rec[a] < rec[b]:
			return -1
		case rec[a] > rec[b]:
			return 1
		}
		return 0
	})
	want := make([]string, 6)
	for i := range want {
		want[i] = strconv.Itoa(order[i])
	}
	if got := rowsShown(t, v); !slices.Equal(got, want) {
		t.Errorf("rows %v, want the six lowest recalls %v", got, want)
	}
	v = fixture.View(t, m, 78, 8, "/", "5", "0", "0", "enter")
	if got := rowsShown(t, v); len(got) == 0 || got[0] != "500" {
		t.Errorf("after /500 rows %v, want class 500 first", got)
	}
	if !strings.Contains(v, "» class 500") {
		t.Errorf("class 500 is not marked:\n%s", v)
	}
}

// G not loaded yet: sorted by gain, the pane says so and shows no gains;
// when G arrives (a new refresh value at the same step), it sorts by it.
func TestGainBeforeG(t *testing.T) {
	run, full := fixture.GLoading(100)
	m := New(fixture.Plain(), run)
	v := fixture.View(t, m, 78, 8, "r", "r")
	if !strings.Contains(m.Title(), "by gain ↓ (G loading…)") || !strings.Contains(v, "     —") {
		t.Errorf("title %q, view:\n%s\nwant the gain column empty and the title saying G is loading", m.Title(), v)
	}
	run.Cur = full
	m.Update(pane.RefreshMsg{})
	if m.Title() != "classes 1–6 of 100 · by gain ↓" {
		t.Errorf("title %q after G arrived", m.Title())
	}
	if v := m.View(); strings.Contains(v, "     —") {
		t.Errorf("gains still missing after G arrived:\n%s", v)
	}
}

package eventlog

import (
	"fmt"
	"strings"
	"testing"

	"selmix/core/loop"
	"selmix/tui/internal/fixture"
	"selmix/tui/runstate"
)

func TestView(t *testing.T) {
	withNotes := func() *runstate.State {
		r := fixture.Run(10, 8)
		r.Note(runstate.Warn, "fork is not available yet")
		r.Apply(fixture.Final(r.Latest))
		return r
	}
	fixture.Cases(t, New, fixture.GoldenTitled, []fixture.Case{
		{Name: "empty", Run: runstate.New(fixture.Info(10)), W: 40, H: 3},
		{Name: "tail", Run: withNotes(), W: 78, H: 8},
		{Name: "scrolled-back", Run: withNotes(), W: 78, H: 5, Keys: []string{"k", "k", "k"}},
	})
}

// The log follows its tail; scrolled up, it stays where the user left it
// while events arrive, and says how many are newer.
func TestFollowAndPin(t *testing.T) {
	r := fixture.Run(10, 8)
	m := New(fixture.Plain(), r)
	following := fixture.View(t, m, 78, 4)
	r.Note(runstate.Note, "a new event")
	if v := m.View(); v == following || !strings.Contains(v, "a new event") {
		t.Errorf("following view does not show the new event:\n%s", v)
	}
	pinned := fixture.View(t, m, 78, 4, "k", "k")
	if got, want := m.Title(), "events (2 newer below, end/G to follow)"; got != want {
		t.Errorf("Title() = %q, want %q", got, want)
	}
	r.Note(runstate.Note, "another event")
	if v := m.View(); v != pinned {
		t.Errorf("scrolled-up view moved when an event arrived:\n%s\nwant\n%s", v, pinned)
	}
	if got, want := m.Title(), "events (3 newer below, end/G to follow)"; got != want {
		t.Errorf("Title() = %q, want %q", got, want)
	}
}

// c shows the worker's lines only, cleaned, under the trainer's figures,
// and back.
func TestConsole(t *testing.T) {
	fixture.Cases(t, New, fixture.GoldenTitled, []fixture.Case{
		{Name: "worker-events", Run: fixture.Apply(fixture.Info(10), fixture.Worker(10, 4)), W: 90, H: 14},
		{Name: "worker-console", Run: fixture.Apply(fixture.Info(10), fixture.Worker(10, 4)), W: 90, H: 14, Keys: []string{"c"}},
		{Name: "worker-console-short", Run: fixture.Apply(fixture.Info(10), fixture.Worker(10, 4)), W: 60, H: 5, Keys: []string{"c"}},
		{Name: "worker-console-back", Run: fixture.Apply(fixture.Info(10), fixture.Worker(10, 4)), W: 90, H: 14, Keys: []string{"c", "k", "c"}},
		{Name: "no-worker", Run: fixture.Run(10, 4), W: 90, H: 5, Keys: []string{"c"}},
		// A worker that has written nothing yet is not "no worker".
		{Name: "worker-quiet", Run: quietWorker(), W: 90, H: 5, Keys: []string{"c"}},
	})
}

// quietWorker is a run trained by a worker that has written no line.
func quietWorker() *runstate.State {
	r := fixture.Run(10, 4)
	r.Info.Worker = "python3 workers/torch/selmix_worker.py"
	return r
}

// A burst of worker lines keeps the log at its bound; a window the user
// scrolled back to stays on the same entries while old ones are
// dropped, and the view draws only its rows.
func TestBurst(t *testing.T) {
	r := fixture.Run(10, 2)
	m := New(fixture.Plain(), r)
	m.SetSize(80, 6)
	line := func(i int) { r.Apply(loop.Snapshot{Kind: loop.KindLog, Text: fmt.Sprintf("line %d", i)}) }
	for i := range runstate.MaxLog {
		line(i)
	}
	fixture.Press(m, "c", "k", "k", "k") // the console, scrolled back three lines
	pinned := m.View()
	if !strings.Contains(pinned, "line 9996") || strings.Contains(pinned, "line 9999") {
		t.Fatalf("scrolled-back console:\n%s", pinned)
	}
	for i := runstate.MaxLog; i < runstate.MaxLog+500; i++ {
		line(i)
	}
	if len(r.Console) != runstate.MaxLog {
		t.Fatalf("console holds %d lines, want %d", len(r.Console), runstate.MaxLog)
	}
	if v := m.View(); v != pinned {
		t.Errorf("the window moved when old lines were dropped:\n%s\nwant\n%s", v, pinned)
	}
	if got, want := m.Title(), "worker console (503 newer below, end/G to follow)"; got != want {
		t.Errorf("Title() = %q, want %q", got, want)
	}
	fixture.Press(m, "j")
	if v := m.View(); !strings.Contains(v, "line 9997") || strings.Contains(v, "line 9991") {
		t.Errorf("one line down from the pinned window:\n%s", v)
	}
	fixture.Press(m, "G")
	if v := m.View(); !strings.Contains(v, "line 10499") {
		t.Errorf("following again, the newest line is not shown:\n%s", v)
	}
}

// A frame allocates as much with 10 000 entries as with 100 (give or
// take the growth of a buffer): only the visible rows are drawn, never a
// filtered copy of the log.
func TestViewCostIndependentOfLog(t *testing.T) {
	allocs := func(n int, keys ...string) float64 {
		r := fixture.Run(10, 2)
		for i := range n {
			r.Apply(loop.Snapshot{Kind: loop.KindLog, Text: fmt.Sprintf("line %05d", i)})
		}
		m := New(fixture.Plain(), r)
		m.SetSize(120, 12)
		fixture.Press(m, keys...)
		return testing.AllocsPerRun(20, func() { _ = m.View() })
	}
	for _, keys := range [][]string{nil, {"c"}, {"c", "k", "k"}} {
		if a, b := allocs(100, keys...), allocs(runstate.MaxLog, keys...); b > a+5 {
			t.Errorf("keys %v: a frame allocates %v times with 100 entries, %v with %d", keys, a, b, runstate.MaxLog)
		}
	}
}

// A frame costs the same with 10 000 entries as with 100: only the
// visible rows are drawn.
func BenchmarkViewFullLog(b *testing.B) {
	for _, n := range []int{100, runstate.MaxLog} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			r := fixture.Run(10, 2)
			for i := range n {
				r.Apply(loop.Snapshot{Kind: loop.KindLog, Text: fmt.Sprintf("line %d of a traceback", i)})
			}
			m := New(fixture.Plain(), r)
			m.SetSize(200, 12)
			fixture.Press(m, "c")
			b.ReportAllocs()
			for b.Loop() {
				r.Apply(loop.Snapshot{Kind: loop.KindLog, Text: "one more"})
				_ = m.View()
			}
		})
	}
}

// A result line wider than the pane is wrapped, not cut, and the newest
// line stays in view (issue 46: at 140 columns the end-of-run line ended
// "… worst recall 0.5680 (at the end 0.…").
func TestLongResultWraps(t *testing.T) {
	r := fixture.Run(10, 8)
	long := "best checkpoint at step 1720 (validation min-recall 0.7323): test min-recall 0.7016, worst recall 0.5680 (at the end 0.5543)"
	r.Note(runstate.Note, long)
	m := New(fixture.Plain(), r)
	v := fixture.View(t, m, 70, 5)
	flat := strings.Join(strings.Fields(v), " ")
	for _, want := range []string{"worst recall 0.5680", "(at the end 0.5543)", "test min-recall 0.7016,"} {
		if !strings.Contains(flat, want) {
			t.Errorf("the wrapped line lacks %q:\n%s", want, v)
		}
	}
	lines := strings.Split(v, "\n")
	if last := strings.TrimSpace(lines[len(lines)-1]); !strings.HasSuffix(last, "0.5543)") {
		t.Errorf("the last line %q is not the end of the newest entry:\n%s", last, v)
	}
}

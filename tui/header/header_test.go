package header

import (
	"testing"

	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/tui/internal/fixture"
	"selmix/tui/runstate"
)

func TestView(t *testing.T) {
	paused := func() *runstate.State {
		snaps := fixture.Running(10, 4)
		p := snaps[len(snaps)-1]
		p.Kind, p.State = loop.KindControl, loop.Paused
		p.Ack = &loop.Ack{Control: loop.Control{Op: loop.OpPause}, Step: p.Step}
		return fixture.Apply(fixture.Info(10), append(snaps, p))
	}
	finished := func() *runstate.State {
		r := fixture.Run(10, 4)
		r.Apply(fixture.Final(r.Latest))
		r.Closed = true
		return r
	}
	failed := func() *runstate.State {
		snaps := fixture.Running(10, 2)
		e := snaps[len(snaps)-1]
		e.Kind, e.State, e.Err = loop.KindError, loop.Failed, "step 117: loss is NaN"
		return fixture.Apply(fixture.Info(10), append(snaps, e))
	}
	worker := func() *runstate.State { return fixture.Apply(fixture.Info(10), fixture.Worker(10, 4)) }
	fed := func() *runstate.State {
		r := worker()
		s := *r.System
		s.ImgS, s.MemPeak, s.Util = 2470.4, 5_600_000_000, 0.97
		r.System = &s
		return r
	}
	local := func() *runstate.State {
		r := fixture.Run(10, 4)
		r.System = &loop.System{Device: "cpu (gorgonia, openblas)", RSS: 410 << 20, CPU: 1.93}
		return r
	}
	// A coverage objective with a margin optimizes ψ aimed at α/K + δ,
	// not the objective's reported ψ: the header names it so.
	aimed := func() *runstate.State {
		var snaps []loop.Snapshot
		for i := range 4 {
			snaps = append(snaps, fixture.Aimed(fixture.Refresh(10, i, 2000, metric.MeanRecallCov)))
		}
		return fixture.Apply(fixture.Info(10), snaps)
	}
	huge := func() *runstate.State {
		r := local()
		r.Latest.Hyper.S = 1e30
		return r
	}
	cases := []struct {
		name  string
		run   *runstate.State
		w     int
		state string
	}{
		{"starting", runstate.New(fixture.Info(10)), 80, "starting"},
		{"running-80", fixture.Run(10, 4), 80, "running"},
		{"running-200", fixture.Run(10, 4), 200, "running"},
		{"paused", paused(), 80, "paused"},
		{"finished", finished(), 120, "finished"},
		{"error", failed(), 80, "error"},
		{"gpu-80", worker(), 80, "running"},
		{"gpu-120", worker(), 120, "running"},
		{"gpu-160", worker(), 160, "running"},
		{"gpu-200", worker(), 200, "running"},
		{"local-100", local(), 100, "running"},
		{"fed-120", fed(), 120, "running"},
		{"fed-200", fed(), 200, "running"},
		{"huge-s-120", huge(), 120, "running"},
		{"cov-aimed-120", aimed(), 120, "running"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := New(fixture.Plain(), c.run)
			if got := m.State(); got != c.state {
				t.Errorf("State() = %q, want %q", got, c.state)
			}
			fixture.Golden(t, m, c.w, 2)
		})
	}
}

// s is shown in a few columns whatever its size: a huge one does not push
// the process's figures off the line.
func TestCompact(t *testing.T) {
	for _, c := range []struct {
		x    float64
		want string
	}{
		{10, "10"}, {1, "1"}, {0.95, "0.95"}, {12.5, "12.5"}, {0, "0"}, {1234.5678, "1234.568"},
		{1e30, "1e+30"}, {-1e30, "-1e+30"}, {123456789, "1.235e+08"}, {1e-5, "1e-05"}, {-0.0001, "-0.0001"},
	} {
		if got := compact(c.x); got != c.want {
			t.Errorf("compact(%v) = %q, want %q", c.x, got, c.want)
		}
	}
}

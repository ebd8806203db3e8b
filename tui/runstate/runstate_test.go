package runstate_test

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"selmix/core/gain"
	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/tui/internal/fixture"
	"selmix/tui/runstate"
)

func TestApply(t *testing.T) {
	snaps := fixture.Running(10, 4)
	r := fixture.Apply(fixture.Info(10), snaps)
	if got := len(r.Steps); got != 4 {
		t.Errorf("refreshes kept = %d, want 4", got)
	}
	if r.Prev == nil || r.Cur == nil || r.Prev.Step != 100 || r.Cur.Step != 150 {
		t.Fatalf("Prev/Cur are not the last two refreshes (want steps 100, 150)")
	}
	first := fixture.Refresh(10, 0, 2000, metric.MinRecall)
	for o, v := range r.Baseline {
		if v != first.Refresh.Objectives[o] {
			t.Errorf("baseline[%d] = %g, want the first refresh's %g", o, v, first.Refresh.Objectives[o])
		}
	}
	// A step snapshot must not add a refresh point even though it carries
	// the last refresh.
	st := snaps[len(snaps)-1]
	st.Step++
	r.Apply(st)
	if got := len(r.Steps); got != 4 {
		t.Errorf("after a step snapshot refreshes = %d, want 4", got)
	}
	var warns int
	for _, e := range r.Log {
		if e.Level == runstate.Warn {
			warns++
		}
	}
	if warns != 1 {
		t.Errorf("refused controls logged as warnings = %d, want 1", warns)
	}
}

func TestLambdaHistoryRestartsOnObjectiveChange(t *testing.T) {
	r := runstate.New(fixture.Info(10))
	r.Apply(fixture.Refresh(10, 0, 2000, metric.MinRecall))
	r.Apply(fixture.Refresh(10, 1, 2000, metric.MeanRecall)) // no multipliers
	r.Apply(fixture.Refresh(10, 2, 2000, metric.MinRecall))
	r.Apply(fixture.Refresh(10, 3, 2000, metric.MinRecall))
	if got := len(r.LambdaHistory(0, 10)); got != 2 {
		t.Errorf("λ history length = %d, want 2 (since the objective changed back)", got)
	}
}

func TestErrorAndFinal(t *testing.T) {
	r := runstate.New(fixture.Info(10))
	s := fixture.Refresh(10, 0, 2000, metric.MinRecall)
	r.Apply(s)
	e := s
	e.Kind, e.State, e.Err = loop.KindError, loop.Failed, "boom"
	r.Apply(e)
	if r.Err != "boom" || r.Phase() != "failed" {
		t.Errorf("after error: Err %q phase %q", r.Err, r.Phase())
	}
	r2 := runstate.New(fixture.Info(10))
	r2.Apply(s)
	r2.Apply(fixture.Final(s))
	if r2.Summary == nil || r2.Phase() != "done" {
		t.Errorf("after final: summary %v phase %q", r2.Summary, r2.Phase())
	}
	// The best checkpoint's test metrics stand beside the final ones,
	// each ψ labelled with its objective.
	r3 := runstate.New(fixture.Info(10))
	r3.Apply(s)
	fin := fixture.Final(s)
	sm := *fin.Summary
	n := len(sm.TestObjAfter)
	sm.Best = &loop.Best{Step: 300, Objective: metric.HMean, Psi: 0.71, TestObj: make([]float64, n),
		Test: metric.Report{MinRecall: 0.52}}
	sm.Best.TestObj[slices.Index(metric.Objectives(), metric.HMean)] = 0.69
	sm.TestAfter.MinRecall = 0.4
	fin.Summary = &sm
	r3.Apply(fin)
	want := "best checkpoint at step 300 (validation hmean 0.7100): test hmean 0.6900, worst recall 0.5200 (at the end 0.4000)"
	if got := r3.Log[len(r3.Log)-1].Text; got != want {
		t.Errorf("last log line after a final with a best:\n got %q\nwant %q", got, want)
	}
}

// With a coverage margin in force the ψ a refresh optimizes, and the best
// checkpoint is judged on, is aimed at α/K + δ, not the objective's
// reported ψ (0.0372 against 0.8363, issue 46): the event log names it
// "ψ aimed"; without a margin the line is as before.
func TestAimedPsiNamed(t *testing.T) {
	plain := fixture.Refresh(10, 1, 2000, metric.MeanRecallCov)
	aimed := fixture.Aimed(plain)
	for _, c := range []struct {
		name string
		s    loop.Snapshot
		want string
	}{
		{"no margin", plain, fmt.Sprintf("refresh ψ mean-recall@cov %.4f  worst recall", plain.Refresh.Psi)},
		{"margin", aimed, fmt.Sprintf("refresh ψ aimed mean-recall@cov %.4f  worst recall", aimed.Refresh.Psi)},
	} {
		r := runstate.New(fixture.Info(10))
		r.Apply(c.s)
		if got := r.Log[0].Text; !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: refresh line %q, want it to begin %q", c.name, got, c.want)
		}
	}

	r := runstate.New(fixture.Info(10))
	r.Apply(aimed)
	fin := fixture.Final(aimed)
	sm := *fin.Summary
	i := metric.MeanRecallCov.Index()
	sm.Best = &loop.Best{Step: 50, Objective: metric.MeanRecallCov, Psi: 0.0372, Aimed: true, TestObj: slices.Clone(sm.TestObjAfter),
		Test: metric.Report{MinRecall: 0.52}}
	sm.Best.TestObj[i] = 0.8363
	fin.Summary = &sm
	r.Apply(fin)
	want := "best checkpoint at step 50 (validation ψ aimed mean-recall@cov 0.0372): test mean-recall@cov 0.8363, worst recall 0.5200 (at the end 0.0000)"
	if got := r.Log[len(r.Log)-1].Text; got != want {
		t.Errorf("best line of a run with a margin:\n got %q\nwant %q", got, want)
	}
}

// A control acknowledged with recomputed G and P replaces what the heatmap
// shows, but adds no point to the histories.
func TestControlUpdatesCurrentGain(t *testing.T) {
	r := fixture.Run(10, 4)
	cur := *r.Cur
	cur.S = 20
	ack := loop.Snapshot{Kind: loop.KindControl, Step: 170, Refresh: &cur,
		Ack: &loop.Ack{Control: loop.Control{Op: loop.OpSet, Key: "s", Value: "20"}, Step: 170}}
	r.Apply(ack)
	if r.Cur != &cur {
		t.Error("the acknowledged control's G and P are not shown")
	}
	if got := len(r.Steps); got != 4 {
		t.Errorf("refreshes = %d after a control, want 4", got)
	}
}

// noMatrices is a refresh snapshot as a recorded run replays it: G and P
// not loaded yet.
func noMatrices(i int) loop.Snapshot {
	s := fixture.Refresh(10, i, 2000, metric.MinRecall)
	rs := *s.Refresh
	rs.G, rs.P = nil, nil
	s.Refresh = &rs
	return s
}

// G and P loaded apart from their refresh fill in Cur when it is that
// refresh, whichever arrives first, without writing to the snapshot, and
// stay through controls that carry the same refresh.
func TestSetMatrices(t *testing.T) {
	G, P := []float64{1, 2, 3, 4}, []float64{0.1, 0.2, 0.3, 0.4}
	for _, first := range []string{"snapshots", "matrices"} {
		t.Run(first+" first", func(t *testing.T) {
			r := runstate.New(fixture.Info(10))
			a, b := noMatrices(0), noMatrices(1)
			if first == "matrices" {
				r.SetMatrices(50, G, P)
			}
			r.Apply(a)
			if r.Cur.G != nil {
				t.Error("G of step 50 filled in the refresh of step 0")
			}
			r.Apply(b)
			if first == "snapshots" {
				r.SetMatrices(50, G, P)
			}
			if r.Cur.G == nil || r.Cur.P[3] != 0.4 || r.Cur.Step != 50 {
				t.Fatalf("Cur at step %d has G %v, P %v; want the loaded ones", r.Cur.Step, r.Cur.G, r.Cur.P)
			}
			if b.Refresh.G != nil {
				t.Error("SetMatrices wrote into the snapshot")
			}
			// An ack replayed with the same (matrix-less) refresh keeps them;
			// the same refresh again adds no point.
			ack := loop.Snapshot{Kind: loop.KindControl, Step: 50, Refresh: b.Refresh,
				Ack: &loop.Ack{Control: loop.Control{Op: loop.OpPause}, Step: 50}}
			r.Apply(ack)
			r.Apply(b)
			if r.Cur.G == nil || len(r.Steps) != 2 {
				t.Errorf("after an ack and a repeat: G %v, %d refreshes; want G kept, 2", r.Cur.G, len(r.Steps))
			}
			// A control that recomputed G and P shows those.
			nc := *b.Refresh
			nc.G, nc.P = []float64{9}, []float64{1}
			r.Apply(loop.Snapshot{Kind: loop.KindControl, Step: 50, Refresh: &nc,
				Ack: &loop.Ack{Control: loop.Control{Op: loop.OpSet, Key: "s", Value: "3"}, Step: 50}})
			if r.Cur.G[0] != 9 {
				t.Errorf("recomputed G not shown: %v", r.Cur.G)
			}
		})
	}
}

// withInterval is refresh i of a K=10 run optimizing obj under policy,
// with the given predicted and realised change (nil: none).
func withInterval(i int, obj metric.Objective, policy gain.Policy, pred, real *float64) loop.Snapshot {
	s := fixture.Refresh(10, i, 2000, obj)
	rs := *s.Refresh
	rs.Predicted, rs.Realised = pred, real
	s.Refresh = &rs
	s.Hyper.Policy = policy
	return s
}

func f(x float64) *float64 { return &x }

func set(step int, key, value string) loop.Snapshot {
	return loop.Snapshot{Kind: loop.KindControl, Step: step,
		Ack: &loop.Ack{Control: loop.Control{Op: loop.OpSet, Key: key, Value: value}, Step: step}}
}

// Every interval gets its figures, or the reason it has none; the counts
// of predicted and wrong-sign intervals follow.
func TestIntervals(t *testing.T) {
	mr, sm := metric.MinRecall, gain.SelMix
	snaps := []loop.Snapshot{
		withInterval(0, mr, sm, nil, nil),                 // first refresh
		withInterval(1, mr, sm, nil, nil),                 // nothing predicted yet: recorded before predictions
		withInterval(2, mr, sm, f(0.02), f(0.01)),         // ratio 0.5
		withInterval(3, mr, gain.None, f(0.04), f(-0.01)), // wrong sign; opens an interval without mixup
		withInterval(4, mr, sm, nil, nil),                 // policy none at the refresh that opened it
		set(220, "alpha", "0.9"),                          // ψ changes mid-interval
		withInterval(5, mr, sm, nil, nil),                 // objective changed
		withInterval(6, metric.MeanRecall, sm, nil, nil),  // objective differs from the opening refresh's
		set(330, "policy", "resample"),                    // mixup stops mid-interval (pairs drawn, not mixed)
		set(340, "policy", "selmix"),
		withInterval(7, metric.MeanRecall, sm, nil, nil), // no mixup steps
		set(360, "policy", "none"),
		{Kind: loop.KindControl, Step: 370, Ack: &loop.Ack{Control: loop.Control{Op: loop.OpSet, Key: "alpha", Value: "2"}, Step: 370, Err: "refused"}},
		withInterval(8, metric.MeanRecall, sm, f(-0.01), f(0.02)), // wrong sign the other way; the policy change above did not stop its prediction
		withInterval(9, metric.MeanRecall, sm, nil, nil),          // no reason known
		withInterval(10, metric.MeanRecall, sm, f(0.03), f(0.03)), // ratio 1
		set(520, "lambda_max", "50"),                              // the engine's key (the workbench once knew only lambda-max)
		withInterval(11, metric.MeanRecall, sm, nil, nil),         // objective changed
		set(570, "lambda-max", "100"),                             // the old alias, too
		withInterval(12, metric.MeanRecall, sm, nil, nil),         // objective changed
	}
	r := fixture.Apply(fixture.Info(10), snaps)
	want := []runstate.Interval{
		{From: -1, Step: 0, Why: runstate.WhyFirst},
		{From: 0, Step: 50, Why: runstate.WhyRecorded},
		{From: 50, Step: 100, OK: true, Predicted: 0.02, Realised: 0.01},
		{From: 100, Step: 150, OK: true, Predicted: 0.04, Realised: -0.01},
		{From: 150, Step: 200, Why: runstate.WhyNone},
		{From: 200, Step: 250, Why: runstate.WhyChanged},
		{From: 250, Step: 300, Why: runstate.WhyChanged},
		{From: 300, Step: 350, Why: runstate.WhyNone},
		{From: 350, Step: 400, OK: true, Predicted: -0.01, Realised: 0.02},
		{From: 400, Step: 450, Why: runstate.WhyUnknown},
		{From: 450, Step: 500, OK: true, Predicted: 0.03, Realised: 0.03},
		{From: 500, Step: 550, Why: runstate.WhyChanged},
		{From: 550, Step: 600, Why: runstate.WhyChanged},
	}
	if len(r.Intervals) != len(want) || len(r.Intervals) != len(r.Steps) {
		t.Fatalf("%d intervals for %d refreshes, want %d", len(r.Intervals), len(r.Steps), len(want))
	}
	for i, w := range want {
		if got := r.Intervals[i]; got != w {
			t.Errorf("interval %d = %+v, want %+v", i, got, w)
		}
	}
	if r.Predicted != 4 || r.Wrong != 2 {
		t.Errorf("predicted %d, wrong sign %d; want 4, 2", r.Predicted, r.Wrong)
	}
	if math.Abs(r.SumPredicted-0.08) > 1e-15 || math.Abs(r.SumRealised-0.05) > 1e-15 {
		t.Errorf("sums predicted %g, realised %g; want 0.08, 0.05", r.SumPredicted, r.SumRealised)
	}
	// Intervals with a prediction, newest first: right, wrong, wrong, right.
	for _, c := range []struct{ n, right, of int }{{1, 1, 1}, {2, 1, 2}, {3, 1, 3}, {40, 2, 4}, {0, 0, 0}} {
		if right, of := r.TrackRecord(c.n); right != c.right || of != c.of {
			t.Errorf("TrackRecord(%d) = %d of %d, want %d of %d", c.n, right, of, c.right, c.of)
		}
	}
	last, ok := r.LastPredicted()
	if !ok || last.Step != 500 {
		t.Errorf("LastPredicted = %+v, %v; want the interval closed at 500", last, ok)
	}
	// A repeated refresh adds no interval.
	r.Apply(snaps[len(snaps)-1])
	if len(r.Intervals) != len(want) {
		t.Errorf("a repeated refresh added an interval")
	}
}

func TestIntervalRatioAndSign(t *testing.T) {
	cases := []struct {
		name  string
		iv    runstate.Interval
		ratio float64 // NaN: none
		wrong bool
	}{
		{"holds", runstate.Interval{OK: true, Predicted: 0.02, Realised: 0.02}, 1, false},
		{"overshoots", runstate.Interval{OK: true, Predicted: 0.02, Realised: 0.05}, 2.5, false},
		{"wrong sign", runstate.Interval{OK: true, Predicted: 0.04, Realised: -0.01}, -0.25, true},
		{"wrong sign, predicted loss", runstate.Interval{OK: true, Predicted: -0.01, Realised: 0.03}, -3, true},
		{"both negative", runstate.Interval{OK: true, Predicted: -0.01, Realised: -0.02}, 2, false},
		{"no change", runstate.Interval{OK: true, Predicted: 0.01, Realised: 0}, 0, false},
		{"zero prediction", runstate.Interval{OK: true, Predicted: 0, Realised: 0.01}, math.NaN(), false},
		{"no prediction", runstate.Interval{Why: runstate.WhyFirst, Predicted: 1, Realised: -1}, math.NaN(), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := c.iv.Ratio()
			if math.IsNaN(c.ratio) != math.IsNaN(got) || !math.IsNaN(got) && math.Abs(got-c.ratio) > 1e-12 {
				t.Errorf("Ratio() = %g, want %g", got, c.ratio)
			}
			if w := c.iv.WrongSign(); w != c.wrong {
				t.Errorf("WrongSign() = %v, want %v", w, c.wrong)
			}
		})
	}
}

// The fixture's run: intervals 1…11 with ratio 0.6 + 0.9·cos(1.7 i),
// negative at i = 2, 6 and 9.
func TestFixtureIntervals(t *testing.T) {
	for _, K := range []int{10, 1000} {
		r := fixture.Run(K, 12)
		if r.Predicted != 11 || r.Wrong != 3 {
			t.Errorf("K=%d: predicted %d, wrong %d; want 11, 3", K, r.Predicted, r.Wrong)
		}
		for i, iv := range r.Intervals[1:] {
			want := 0.6 + 0.9*math.Cos(1.7*float64(i+1))
			if math.Abs(iv.Ratio()-want) > 1e-12 {
				t.Errorf("K=%d interval %d: ratio %g, want %g", K, i+1, iv.Ratio(), want)
			}
		}
	}
}

// The log keeps the last MaxLog entries however many arrive; worker lines
// also go to the console, cleaned for one row of the terminal.
func TestBoundedLog(t *testing.T) {
	r := runstate.New(fixture.Info(10))
	r.Apply(fixture.Refresh(10, 0, 2000, metric.MinRecall))
	n := runstate.MaxLog + 2500
	for i := range n {
		r.Apply(loop.Snapshot{Kind: loop.KindLog, Text: fmt.Sprintf("line %d", i)})
	}
	r.Note(runstate.Note, "a note")
	if len(r.Log) != runstate.MaxLog || r.LogDropped != n+2-runstate.MaxLog {
		t.Errorf("log holds %d, dropped %d; want %d, %d", len(r.Log), r.LogDropped, runstate.MaxLog, n+2-runstate.MaxLog)
	}
	if got := r.Log[len(r.Log)-1].Text; got != "a note" {
		t.Errorf("newest entry %q, want the note", got)
	}
	if got, want := r.Log[0].Text, fmt.Sprintf("worker: line %d", n+1-runstate.MaxLog); got != want {
		t.Errorf("oldest entry %q, want %q", got, want)
	}
	if len(r.Console) != runstate.MaxLog || r.ConsoleDropped != n-runstate.MaxLog {
		t.Errorf("console holds %d, dropped %d; want %d, %d", len(r.Console), r.ConsoleDropped, runstate.MaxLog, n-runstate.MaxLog)
	}
	if got, want := r.Console[len(r.Console)-1].Text, fmt.Sprintf("line %d", n-1); got != want {
		t.Errorf("newest console line %q, want %q", got, want)
	}
	if len(r.Steps) != 1 || r.Latest.Kind != loop.KindRefresh {
		t.Error("log lines changed the run's state")
	}
}

func TestWorkerLinesCleaned(t *testing.T) {
	long := strings.Repeat("x", 5000)
	cases := []struct{ in, want string }{
		{"plain", "plain"},
		{"a\tb", "a       b"},
		{"ab\tc\td", "ab      c       d"},
		{"10%|█   \r50%|█████\r", "50%|█████"},
		{"\x1b[31merror\x1b[0m: bad", "error: bad"},
		{"bell\a and nul\x00", "bell and nul"},
		{"bad \xff utf8", "bad \uFFFD utf8"},
		{long, strings.Repeat("x", 2000) + "…"},
	}
	for _, c := range cases {
		r := runstate.New(fixture.Info(10))
		r.Apply(loop.Snapshot{Kind: loop.KindLog, Text: c.in})
		if got := r.Console[0].Text; got != c.want {
			t.Errorf("%.40q: console %q, want %q", c.in, got, c.want)
		}
		if got := r.Log[0].Text; got != "worker: "+c.want {
			t.Errorf("%.40q: log %q", c.in, got)
		}
	}
}

// The System of each refresh is kept, the latest shown; a repeated
// refresh adds nothing.
func TestSystemHistory(t *testing.T) {
	snaps := fixture.Worker(10, 4)
	r := fixture.Apply(fixture.Info(10), snaps)
	if len(r.SystemHistory) != 4 {
		t.Fatalf("system reports kept %d, want 4", len(r.SystemHistory))
	}
	if r.System == nil || !reflect.DeepEqual(*r.System, *fixture.GPU(3)) {
		t.Errorf("System = %+v, want the last refresh's %+v", r.System, fixture.GPU(3))
	}
	for _, s := range snaps {
		if s.Kind == loop.KindRefresh && s.Step == 150 {
			r.Apply(s)
		}
	}
	if len(r.SystemHistory) != 4 {
		t.Errorf("a repeated refresh added a system report")
	}
	if len(r.Console) != 9 { // 1 at the start, 1 per refresh, 4 after the second
		t.Errorf("console has %d lines, want 9", len(r.Console))
	}
}

// When the linear step keeps failing, the event log says so once, in one
// line, with what to try.
func TestLinearFailingWarning(t *testing.T) {
	r := runstate.New(fixture.Info(10))
	mr, sm := metric.MinRecall, gain.SelMix
	r.Apply(withInterval(0, mr, sm, nil, nil))
	// Refreshes 1–7: wrong, wrong, right, wrong, wrong, wrong, wrong.
	for i, wrong := range []bool{true, true, false, true, true, true, true} {
		real := 0.01
		if wrong {
			real = -0.01
		}
		r.Apply(withInterval(i+1, mr, sm, f(0.02), f(real)))
	}
	var warns []string
	for _, e := range r.Log {
		if strings.Contains(e.Text, "linear step is failing") {
			warns = append(warns, e.Text)
			if e.Level != runstate.Warn {
				t.Errorf("the warning is logged at level %v, want Warn", e.Level)
			}
		}
	}
	want := "the linear step is failing: 4 of the last 5 refreshes moved ψ the other way — try a smaller s (now 10), finetune.refresh 10 or finetune.adapt = lr"
	if len(warns) != 1 || warns[0] != want {
		t.Errorf("warnings = %q, want once %q", warns, want)
	}
}

// The event log says who changed what: the researcher's controls as they
// are, the others with their source.
func TestControlSourceLogged(t *testing.T) {
	r := &runstate.State{}
	for _, c := range []loop.Control{
		{Op: loop.OpSet, Key: "s", Value: "20", Source: loop.SourceUser},
		{Op: loop.OpSet, Key: "lr", Value: "0.0021", Source: loop.SourceAdapt},
		{Op: loop.OpSet, Key: "batch", Value: "64", Source: loop.SourceReplay},
	} {
		r.Apply(loop.Snapshot{Kind: loop.KindControl, Step: 50, Ack: &loop.Ack{Control: c, Step: 50}})
	}
	var got []string
	for _, e := range r.Log {
		got = append(got, e.Text)
	}
	if want := "set s=20 ✓|set lr=0.0021 (adapt) ✓|set batch=64 (replay) ✓"; strings.Join(got, "|") != want {
		t.Errorf("log %q, want %q", strings.Join(got, "|"), want)
	}
}

// The event log warns at the first refresh of a run that cannot learn
// (issue #37, bug 9), and only then.
func TestCannotLearnWarned(t *testing.T) {
	snaps := fixture.Running(10, 3)
	for i := range snaps {
		if rs := snaps[i].Refresh; rs != nil {
			c := *rs
			c.Report.Coverage = make([]float64, 10)
			c.Report.Coverage[3] = 1
			snaps[i].Refresh = &c
		}
	}
	r := fixture.Apply(fixture.Info(10), snaps)
	n := 0
	for _, e := range r.Log {
		if strings.Contains(e.Text, "predicts class 3 for 100% of validation") {
			n++
			if e.Level != runstate.Warn {
				t.Errorf("level %v, want a warning", e.Level)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d warnings in %d log entries, want 1", n, len(r.Log))
	}
}

// A change adapt makes at a refresh goes on that refresh's line, marked
// adapt; one at another step, and the researcher's, keep lines of their own.
func TestAdaptFoldedIntoRefresh(t *testing.T) {
	r := runstate.New(fixture.Info(10))
	ref := fixture.Refresh(10, 1, 2000, metric.MinRecall)
	r.Apply(ref)
	step := ref.Step
	for _, a := range []loop.Ack{
		{Control: loop.Control{Op: loop.OpSet, Key: "lr", Value: "0.0021", Source: loop.SourceAdapt}, Step: step},
		{Control: loop.Control{Op: loop.OpSet, Key: "s", Value: "20", Source: loop.SourceUser}, Step: step},
		{Control: loop.Control{Op: loop.OpSet, Key: "lr", Value: "0.001", Source: loop.SourceAdapt}, Step: step + 3},
	} {
		r.Apply(loop.Snapshot{Kind: loop.KindControl, Step: a.Step, Ack: &a})
	}
	var got []string
	for _, e := range r.Log {
		got = append(got, e.Text)
	}
	if len(got) != 3 || !strings.HasPrefix(got[0], "refresh ψ min-recall ") || !strings.HasSuffix(got[0], " · lr=0.0021 (adapt)") ||
		got[1] != "set s=20 ✓" || got[2] != "set lr=0.001 (adapt) ✓" {
		t.Errorf("log %q", got)
	}
}

// Attached to a run, the viewer's last refresh (read from disk, without
// statistics) gets them from the run's standing, the first snapshot the
// socket sends, so a paused run forecasts without a step (issue 46); the
// snapshot read from disk is not written.
func TestAttachTakesLastStatistics(t *testing.T) {
	r := fixture.Run(10, 4)
	was := r.Cur
	if was.Basis != nil {
		t.Fatal("the fixture's refresh has statistics already")
	}
	rs := *was
	rs.Basis = &loop.Basis{Step: was.Step, Steps: 2000, Momentum: 0.9}
	r.Apply(loop.Snapshot{Kind: loop.KindStep, Step: was.Step + 3, State: loop.Paused, Refresh: &rs})
	if r.Cur.Basis != rs.Basis || was.Basis != nil {
		t.Errorf("Cur's statistics %v (the recorded refresh's %v), want the standing's", r.Cur.Basis, was.Basis)
	}
	// Another refresh's statistics are not taken.
	r = fixture.Run(10, 4)
	other := *r.Cur
	other.Step--
	other.Basis = rs.Basis
	r.Apply(loop.Snapshot{Kind: loop.KindStep, Step: other.Step + 4, Refresh: &other})
	if r.Cur.Basis != nil {
		t.Error("statistics of another refresh taken")
	}
}

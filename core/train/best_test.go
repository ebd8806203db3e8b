package train_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"reflect"
	"testing"

	"selmix/core/data"
	"selmix/core/local"
	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/core/train"
)

func TestNewBest(t *testing.T) {
	mr, hm := metric.MinRecall, metric.HMeanCov
	tests := []struct {
		name    string
		bestObj *metric.Objective
		best    float64
		obj     metric.Objective
		psi     float64
		want    bool
	}{
		{"first refresh", nil, math.Inf(-1), mr, 0.1, true},
		{"first refresh, negative ψ", nil, math.Inf(-1), mr, -3, true},
		{"higher", &mr, 0.5, mr, 0.6, true},
		{"equal is not better", &mr, 0.5, mr, 0.5, false},
		{"lower", &mr, 0.5, mr, 0.4, false},
		{"new objective, lower ψ", &mr, 0.5, hm, -0.05, true},
		{"NaN never", &mr, 0.5, mr, math.NaN(), false},
		{"NaN never, even first", nil, math.Inf(-1), mr, math.NaN(), false},
	}
	for _, tt := range tests {
		if got := loop.NewBest(tt.bestObj, tt.best, tt.obj, tt.psi); got != tt.want {
			t.Errorf("%s: NewBest = %v, want %v", tt.name, got, tt.want)
		}
	}
}

type kept struct {
	step  int
	state []byte
}

// keepToy runs the toy problem keeping its best; it returns the summary,
// the refresh snapshots and every best checkpoint handed over.
func keepToy(t *testing.T, cfg loop.Config, sp *data.Split, ctl []loop.Control) (*loop.Summary, []loop.Snapshot, []kept) {
	t.Helper()
	e, err := train.New(cfg, toyLocal(t, sp, cfg.Batch))
	if err != nil {
		t.Fatal(err)
	}
	var ks []kept
	e.KeepBest(func(step int, b []byte) error {
		ks = append(ks, kept{step, b})
		return nil
	})
	st := e.Subscribe()
	for _, c := range ctl {
		e.Send(c)
	}
	done := make(chan []loop.Snapshot)
	go func() {
		var ev []loop.Snapshot
		for s, ok := st.Next(context.Background()); ok; s, ok = st.Next(context.Background()) {
			if s.Kind == loop.KindRefresh {
				ev = append(ev, s)
			}
		}
		done <- ev
	}()
	sum, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sum, <-done, ks
}

// The engine keeps a checkpoint at every refresh that raises the best
// validation ψ of the optimized objective (a changed objective starts
// over), and the summary's best is the last of them, with the test
// metrics of the model that checkpoint holds.
func TestKeepBest(t *testing.T) {
	sp := toySplit(4, 6, 90, 1)
	for _, tc := range []struct {
		name string
		ctl  []loop.Control
	}{
		{"one objective", nil},
		{"objective changed at 25", []loop.Control{{Op: loop.OpSet, Key: "objective", Value: "hmean@cov", At: 25}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := toyConfig()
			cfg.LR = 0.2 // big steps: ψ goes down as well as up
			sum, refreshes, ks := keepToy(t, cfg, sp, tc.ctl)
			// The best, recomputed from the refreshes as a reader would.
			var wantSteps []int
			var bestObj *metric.Objective
			best := math.Inf(-1)
			var falls int
			for _, r := range refreshes {
				o := r.Hyper.Objective
				if loop.NewBest(bestObj, best, o, r.Refresh.Psi) {
					bestObj, best = &o, r.Refresh.Psi
					wantSteps = append(wantSteps, r.Step)
				} else {
					falls++
				}
			}
			if falls == 0 {
				t.Fatalf("ψ rose at every refresh: the test would say nothing of keeping the best")
			}
			var gotSteps, flagged []int
			for _, k := range ks {
				gotSteps = append(gotSteps, k.step)
			}
			if !reflect.DeepEqual(gotSteps, wantSteps) {
				t.Fatalf("best checkpoints at steps %v, want %v", gotSteps, wantSteps)
			}
			// Each refresh says whether it is a new best (what the run
			// store records best and best_step from).
			for _, r := range refreshes {
				if r.Refresh.Best {
					flagged = append(flagged, r.Step)
				}
			}
			if !reflect.DeepEqual(flagged, wantSteps) {
				t.Fatalf("refreshes flagged best at steps %v, want %v", flagged, wantSteps)
			}
			if tc.ctl != nil && gotSteps[len(gotSteps)-1] < 30 {
				t.Fatalf("no best taken after the objective changed: %v", gotSteps)
			}
			b := sum.Best
			last := ks[len(ks)-1]
			if b == nil || b.Step != last.step || b.Objective != *bestObj || b.Psi != best {
				t.Fatalf("summary best = %+v, want step %d, %s %v", b, last.step, *bestObj, best)
			}
			for _, r := range refreshes {
				if r.Step == b.Step && !reflect.DeepEqual(r.Refresh.Report, b.Val) {
					t.Errorf("best validation report differs from the refresh at step %d", b.Step)
				}
			}
			// The checkpoint holds the model the test metrics were taken of.
			ck, err := train.ParseCheckpoint(last.state)
			if err != nil {
				t.Fatal(err)
			}
			if ck.Step != b.Step {
				t.Errorf("best checkpoint is at step %d, best at %d", ck.Step, b.Step)
			}
			tr, err := local.Load(sp, ck.Trainer)
			if err != nil {
				t.Fatal(err)
			}
			ev, err := tr.Evaluate(train.SplitTest, false)
			if err != nil {
				t.Fatal(err)
			}
			e, _ := train.New(cfg, tr)
			rep, err := metric.NewReport(ev.C, train.Tail(e))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(rep, b.Test) {
				t.Errorf("test at best = %+v,\nthe best checkpoint's model gives %+v", b.Test, rep)
			}
			if b.Step < sum.Steps && reflect.DeepEqual(b.Test, sum.TestAfter) {
				t.Errorf("test at best (step %d) equals test at the end (step %d)", b.Step, sum.Steps)
			}
		})
	}
}

// A run resumed from the best checkpoint (fork --at best) stands where
// the best was taken and knows it as its best.
func TestResumeFromBest(t *testing.T) {
	sp := toySplit(4, 6, 90, 1)
	cfg := toyConfig()
	cfg.LR = 0.2
	sum, _, ks := keepToy(t, cfg, sp, nil)
	last := ks[len(ks)-1]
	e, err := resumeToy(cfg, sp, last.state)
	if err != nil {
		t.Fatal(err)
	}
	if step, lr := train.StepOf(e), train.LastRefresh(e); step != last.step || lr != last.step {
		t.Errorf("resumed at step %d (last refresh %d), want %d", step, lr, last.step)
	}
	if got := e.Best(); !reflect.DeepEqual(got, sum.Best) {
		t.Errorf("resumed best = %+v, want %+v", got, sum.Best)
	}
	if _, err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Stopped and resumed with the best taken before the interruption (and
// after it), the run keeps the same best as an uninterrupted one: the
// same summary best and, byte for byte, the same best checkpoint.
func TestStopResumeKeepsBest(t *testing.T) {
	sp := toySplit(4, 6, 90, 1)
	cfg := toyConfig()
	cfg.LR = 0.2
	wantSum, _, wantKs := keepToy(t, cfg, sp, nil)
	wantLast := wantKs[len(wantKs)-1]
	// Stop just after a best taken during fine-tuning (it is in the stop
	// checkpoint), and at a step before it.
	stops := []int{3}
	for _, k := range wantKs {
		if k.step > 0 && k.step < cfg.Steps {
			stops = append(stops, k.step+1)
		}
	}
	if len(stops) == 1 {
		t.Fatalf("no best between the first and the last refresh (%d bests): the test would say nothing", len(wantKs))
	}
	for _, stop := range stops {
		e, err := train.New(cfg, toyLocal(t, sp, cfg.Batch))
		if err != nil {
			t.Fatal(err)
		}
		var ks []kept
		keep := func(step int, b []byte) error { ks = append(ks, kept{step, b}); return nil }
		var ckpt []byte
		e.SetCheckpointer(0, func(_ int, b []byte, _ bool) error { ckpt = b; return nil })
		e.KeepBest(keep)
		e.Send(loop.Control{Op: loop.OpStop, At: stop})
		if _, err := e.Run(context.Background()); !errors.Is(err, train.ErrStopped) {
			t.Fatalf("stop at %d: %v", stop, err)
		}
		var before []int
		for _, k := range wantKs {
			if k.step < stop {
				before = append(before, k.step)
			}
		}
		if len(ks) != len(before) {
			t.Fatalf("stop at %d: %d bests before the stop, want %d (%v)", stop, len(ks), len(before), before)
		}
		r, err := resumeToy(cfg, sp, ckpt)
		if err != nil {
			t.Fatal(err)
		}
		r.KeepBest(keep)
		sum, err := r.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(sum.Best, wantSum.Best) {
			t.Errorf("stop at %d: best = %+v, want %+v", stop, sum.Best, wantSum.Best)
		}
		last := ks[len(ks)-1]
		if last.step != wantLast.step || !bytes.Equal(last.state, wantLast.state) {
			t.Errorf("stop at %d: last best checkpoint at step %d differs from the uninterrupted run's at %d", stop, last.step, wantLast.step)
		}
	}
}

// testCounter counts the trainer's evaluations of test.
type testCounter struct {
	train.Trainer
	tests int
}

func (c *testCounter) Evaluate(s train.Split, centroids bool) (*train.Eval, error) {
	if s == train.SplitTest {
		c.tests++
	}
	return c.Trainer.Evaluate(s, centroids)
}

// JudgeBest(false): test is measured before and after only, the summary
// has no best, and everything else equals a run that judges its best.
func TestJudgeBestOff(t *testing.T) {
	sp := toySplit(4, 6, 90, 1)
	var sums [2]*loop.Summary
	var tests [2]int
	var flags [2][]int // the steps of the refreshes flagged best
	for i, on := range []bool{true, false} {
		tr := &testCounter{Trainer: toyLocal(t, sp, toyConfig().Batch)}
		e, err := train.New(toyConfig(), tr)
		if err != nil {
			t.Fatal(err)
		}
		e.JudgeBest(on)
		st := e.Subscribe()
		done := make(chan []int)
		go func() {
			var f []int
			for s, ok := st.Next(context.Background()); ok; s, ok = st.Next(context.Background()) {
				if s.Kind == loop.KindRefresh && s.Refresh.Best {
					f = append(f, s.Step)
				}
			}
			done <- f
		}()
		if sums[i], err = e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		tests[i], flags[i] = tr.tests, <-done
	}
	if len(flags[0]) == 0 || !reflect.DeepEqual(flags[0], flags[1]) {
		t.Errorf("refreshes flagged best: %v judging, %v not; want the same, not none", flags[0], flags[1])
	}
	if tests[1] != 2 || tests[0] <= 2 {
		t.Errorf("test evaluations: %d judging the best, %d not; want more than 2, and 2", tests[0], tests[1])
	}
	if sums[0].Best == nil || sums[1].Best != nil {
		t.Fatalf("summary best: %v judging, %v not; want one, and none", sums[0].Best, sums[1].Best)
	}
	sums[0].Best, sums[0].Seconds, sums[1].Seconds = nil, 0, 0
	if !reflect.DeepEqual(sums[0], sums[1]) {
		t.Errorf("judging the best changed the run:\n on %+v\noff %+v", sums[0], sums[1])
	}
}

// A best checkpoint is the model and the run's state at its step, not the
// run's future: a control scheduled ahead (a replay's, sent with its step
// before the run starts) is not in the best checkpoints taken before it,
// so a replay keeps, byte for byte, the best its original kept, and a
// fork from either starts alike.
func TestBestCheckpointLeavesScheduledControlsOut(t *testing.T) {
	sp := toySplit(4, 6, 90, 1)
	cfg := toyConfig()
	_, _, plain := keepToy(t, cfg, sp, nil)
	_, _, scheduled := keepToy(t, cfg, sp, []loop.Control{{Op: loop.OpSet, Key: "s", Value: "5", At: 25}})
	var compared int
	for i, k := range plain {
		if k.step >= 25 {
			break
		}
		if i >= len(scheduled) || scheduled[i].step != k.step {
			t.Fatalf("best checkpoints before step 25 at different steps")
		}
		if !bytes.Equal(scheduled[i].state, k.state) {
			t.Errorf("best checkpoint at step %d holds the control scheduled for step 25", k.step)
		}
		compared++
	}
	if compared == 0 {
		t.Fatal("no best checkpoint before step 25: the test says nothing")
	}
}

// A best judged on ψ aimed at α/K + δ (a coverage objective with a
// margin) says so, and a run resumed from the best checkpoint knows it
// (issue 46); without a margin its ψ is the objective's reported ψ.
func TestBestAimed(t *testing.T) {
	sp := toySplit(4, 6, 90, 1)
	for _, m := range []loop.Margin{0, loop.MarginAuto, 0.002} {
		cfg := toyConfig()
		cfg.Objective, cfg.CovMargin = metric.MeanRecallCov, m
		sum, _, ks := keepToy(t, cfg, sp, nil)
		want := m != 0
		if sum.Best == nil || sum.Best.Aimed != want {
			t.Fatalf("margin %v: summary best %+v, want Aimed %v", m, sum.Best, want)
		}
		e, err := resumeToy(cfg, sp, ks[len(ks)-1].state)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.Best(); got == nil || got.Aimed != want {
			t.Errorf("margin %v: resumed from the best, best %+v, want Aimed %v", m, got, want)
		}
	}
	for _, c := range []struct {
		obj    metric.Objective
		margin loop.Margin
		want   bool
	}{
		{metric.MeanRecallCov, 0, false}, {metric.MeanRecallCov, loop.MarginAuto, true}, {metric.HMeanHTCov, 0.01, true},
		{metric.MinRecall, loop.MarginAuto, false}, {"no-such-objective", loop.MarginAuto, false},
	} {
		if got := loop.Aimed(c.obj, c.margin); got != c.want {
			t.Errorf("Aimed(%s, %v) = %v, want %v", c.obj, c.margin, got, c.want)
		}
	}
	if loop.PsiLabel(true) != "ψ aimed" || loop.PsiLabel(false) != "ψ" {
		t.Errorf("PsiLabel: %q, %q", loop.PsiLabel(true), loop.PsiLabel(false))
	}
}

package record

import (
	"math"
	"reflect"
	"testing"

	"selmix/core/loop"
	"selmix/core/metric"
)

// withObjectives rewrites a synth run's refreshes: refresh i optimizes
// objs[i] and its ψ is psis[i].
func withObjectives(snaps []loop.Snapshot, objs []metric.Objective, psis []float64) []loop.Snapshot {
	i := 0
	for k := range snaps {
		s := &snaps[k]
		if s.Kind != loop.KindRefresh {
			continue
		}
		s.Hyper.Objective = objs[i]
		rs := *s.Refresh
		rs.Psi = psis[i]
		s.Refresh = &rs
		i++
	}
	return judged(snaps)
}

// After a mid-run objective change, the best is judged on the new
// objective: min-recall's 0.56 at step 10 is not hmean@cov's best
// (issue 26: runs show said "best hmean@cov 0.5643 at step 300").
func TestBestAfterObjectiveChange(t *testing.T) {
	mr, hc := metric.MinRecall, metric.HMeanCov
	snaps := withObjectives(synth(3, 6, 10, 1),
		[]metric.Objective{mr, mr, mr, hc, hc, hc},
		[]float64{0.3, 0.56, 0.4, -0.05, 0.1, 0.05})
	root := t.TempDir()
	id := record(t, root, "", 3, snaps)
	r, h := open(t, root, id)
	if m := r.Meta; m.Best != 0.1 || m.BestStep != 40 || m.BestObjective != "hmean@cov" || m.Objective != "hmean@cov" {
		t.Errorf("run.json: best %v at %d of %q (objective %q), want 0.1 at 40 of hmean@cov", m.Best, m.BestStep, m.BestObjective, m.Objective)
	}
	want := []Best{
		{Objective: "min-recall", Psi: 0.56, Step: 10, From: 0, To: 20},
		{Objective: "hmean@cov", Psi: 0.1, Step: 40, From: 30, To: 50},
	}
	if got := h.Bests(); !reflect.DeepEqual(got, want) {
		t.Errorf("Bests:\n got %+v\nwant %+v", got, want)
	}
}

// A ψ that is not a number is never a best (loop.NewBest, the engine's
// rule): a run whose first refresh has none finds its best after it.
func TestBestSkipsNaN(t *testing.T) {
	mr := metric.MinRecall
	snaps := withObjectives(synth(3, 4, 10, 1), []metric.Objective{mr, mr, mr, mr}, []float64{math.NaN(), 0.3, 0.2, 0.35})
	root := t.TempDir()
	id := record(t, root, "", 3, snaps)
	r, _ := open(t, root, id)
	if m := r.Meta; m.Best != 0.35 || m.BestStep != 30 {
		t.Errorf("run.json: best %v at %d, want 0.35 at 30", m.Best, m.BestStep)
	}
}

// The summary's best goes to disk (final event, summary.json) and comes
// back whole: the stop event keeps its scalars only.
func TestSummaryBestRoundTrip(t *testing.T) {
	snaps := synth(3, 4, 10, 1)
	fin := &snaps[len(snaps)-1]
	sum := *fin.Summary
	objs := make([]float64, len(metric.Objectives()))
	for i := range objs {
		objs[i] = 0.1 * float64(i)
	}
	sum.Best = &loop.Best{Step: 20, Objective: metric.MinRecall, Psi: 0.61, Val: sum.ValAfter, Test: sum.TestAfter, TestObj: objs}
	fin.Summary = &sum
	root := t.TempDir()
	id := record(t, root, "", 3, snaps)
	r, h := open(t, root, id)
	if h.Final == nil || !reflect.DeepEqual(h.Final.Best, sum.Best) {
		t.Errorf("final event's best:\n got %+v\nwant %+v", h.Final.Best, sum.Best)
	}
	s, err := LoadSummary(r)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.Best, sum.Best) {
		t.Errorf("summary.json's best:\n got %+v\nwant %+v", s.Best, sum.Best)
	}
	scalars := SummaryRecord(&sum, false).Best
	if scalars == nil || scalars.Test.Recall != nil || scalars.Step != 20 || float64(scalars.Psi) != 0.61 {
		t.Errorf("a stop's best = %+v, want step 20, ψ 0.61 and no per-class vectors", scalars)
	}
}

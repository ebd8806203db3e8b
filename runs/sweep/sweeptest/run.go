package sweeptest

import (
	"context"
	"strings"
	"testing"

	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/runs"
	"selmix/runs/record"
	"selmix/runs/sweep"
)

// Refresh is one refresh of a run Record writes: its step, ψ of the
// optimized objective (min recall, the same ψ any metric = "min-recall"
// ranks by) and the researcher's settings in force on top of the
// defaults ("s=0.6"; the refresh records an lr a third of theirs, as
// finetune.adapt = "lr" would).
type Refresh struct {
	Step int
	Psi  float64
	Sets []string
}

// Run is a run Record writes under a sweep's runs root.
type Run struct {
	Name string
	// Parent, when set, is the id of the run it forks at step Start (as
	// a population's exploit does); a run without one starts at step 0.
	Parent    string
	Start     int
	Refreshes []Refresh
	// End is the step it stands at: stopped there (sweep member
	// --stop-at) if Stop, else finished there with a summary whose ψ is
	// its last refresh's.
	End  int
	Stop bool
}

// Record writes run under s's runs root and returns its id.
func Record(t testing.TB, s *sweep.Sweep, run Run) string {
	t.Helper()
	total := 300
	if s.PBT != nil {
		total = s.PBT.Steps
	}
	meta := runs.Meta{Parent: run.Parent, ParentStep: run.Start}
	// Its configuration holds the settings of its first refresh (a fork's
	// what it runs at its start), under finetune.adapt = "lr".
	config := "seed = 1\n[finetune]\nadapt = \"lr\"\n"
	if len(run.Refreshes) > 0 {
		for _, kv := range run.Refreshes[0].Sets {
			k, v, _ := strings.Cut(kv, "=")
			config += k + " = " + v + "\n"
		}
	}
	rec, err := record.New(s.Root, run.Name, config, record.Options{}, meta)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.LogStart(record.Start{Step: run.Start, Total: total, K: 2, Resumed: run.Parent != ""}); err != nil {
		t.Fatal(err)
	}
	st := loop.NewStream()
	hyper := loop.DefaultHyper()
	objs := func(psi float64) []float64 {
		o := make([]float64, len(metric.Objectives()))
		o[metric.MinRecall.Index()] = psi
		return o
	}
	last := 0.0
	for _, r := range run.Refreshes {
		h := hyper
		for _, kv := range r.Sets {
			k, v, _ := strings.Cut(kv, "=")
			if err := h.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
		// The engine's own: adapt has shrunk the step (a refresh holds
		// the engine's settings, the researcher's are the configuration's).
		h.Adapt, h.LR = loop.AdaptLR, h.LR/3
		rep := metric.Report{K: 2, Prior: []float64{0.5, 0.5}, Recall: []float64{r.Psi, r.Psi}, Coverage: []float64{0.5, 0.5}, MinRecall: r.Psi}
		rs := &loop.Refresh{Step: r.Step, K: 2, Psi: r.Psi, Report: rep, Objectives: objs(r.Psi), G: []float64{0, 1, 1, 0}, P: []float64{0, 0.5, 0.5, 0}}
		st.Publish(loop.Snapshot{Kind: loop.KindRefresh, Step: r.Step, Total: total, State: loop.Running, Hyper: h, Refresh: rs})
		last = r.Psi
	}
	state, sum := loop.Finished, &loop.Summary{Steps: run.End, Objective: metric.MinRecall, TestObjAfter: objs(last)}
	if run.Stop {
		state, sum = loop.Stopped, &loop.Summary{Steps: run.End, Objective: metric.MinRecall}
	}
	st.Publish(loop.Snapshot{Kind: loop.KindFinal, Step: run.End, Total: total, State: state, Hyper: hyper, Summary: sum})
	st.Close()
	if err := rec.Follow(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	id := rec.Writer().ID()
	rec.Writer().Close()
	return id
}

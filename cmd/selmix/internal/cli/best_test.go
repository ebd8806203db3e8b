package cli

import (
	"context"
	"strings"
	"testing"

	"selmix/core/metric"
	"selmix/core/train"
	"selmix/runs"
	"selmix/runs/record"
)

// objectiveChangeRun records a run of K=2 classes and four refreshes,
// ten steps apart: min-recall with ψ 0.3, 0.56, then hmean@cov with ψ
// −0.05, 0.1.
func objectiveChangeRun(t *testing.T, root string) string {
	t.Helper()
	rec, err := record.New(root, "switch", "", runs.Meta{Objective: "min-recall", Policy: "selmix"})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.LogStart(record.Start{Total: 30, K: 2}); err != nil {
		t.Fatal(err)
	}
	st := train.NewStream()
	done := make(chan error, 1)
	go func() { done <- rec.Follow(context.Background(), st, nil) }()
	h := train.DefaultHyper()
	for i, v := range []struct {
		obj metric.Objective
		psi float64
	}{{metric.MinRecall, 0.3}, {metric.MinRecall, 0.56}, {metric.HMeanCov, -0.05}, {metric.HMeanCov, 0.1}} {
		h.Objective = v.obj
		rep := metric.Report{K: 2, Prior: []float64{0.5, 0.5}, Recall: []float64{0.5, 0.5}, Coverage: []float64{0.5, 0.5}}
		st.Publish(train.Snapshot{Kind: train.KindRefresh, Step: 10 * i, Total: 30, State: train.Running, Hyper: h,
			Refresh: &train.RefreshStats{Step: 10 * i, K: 2, Report: rep, Psi: v.psi, Objectives: make([]float64, len(metric.Objectives())),
				G: make([]float64, 4), P: []float64{0.25, 0.25, 0.25, 0.25}}})
	}
	st.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(true); err != nil {
		t.Fatal(err)
	}
	return rec.Writer().ID()
}

// runs show and runs ls judge each ψ with its own objective: after the
// change to hmean@cov, min-recall's 0.56 is not hmean@cov's best.
func TestBestAfterObjectiveChange(t *testing.T) {
	root := t.TempDir()
	id := objectiveChangeRun(t, root)
	code, stdout, stderr := runCLI("runs", "show", "--runs", root, id)
	if code != 0 {
		t.Fatalf("runs show: exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"best      ψ hmean@cov 0.1000 at step 30 (validation, optimized from step 20 to 30)\n",
		"          ψ min-recall 0.5600 at step 10 (validation, optimized from step 0 to 10)\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("runs show lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, stderr = runCLI("runs", "ls", "--runs", root)
	if code != 0 {
		t.Fatalf("runs ls: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "hmean@cov") || !strings.Contains(stdout, "0.1000 (30)") || strings.Contains(stdout, "0.5600") {
		t.Errorf("runs ls: want hmean@cov's best 0.1000 at 30:\n%s", stdout)
	}
	code, stdout, _ = runCLI("runs", "ls", "--json", "--runs", root)
	if code != 0 || !strings.Contains(stdout, `"best_objective": "hmean@cov"`) {
		t.Errorf("runs ls --json: exit %d, want best_objective hmean@cov:\n%s", code, stdout)
	}
}

// The workbench learns from a recorded run's config whether a worker
// trains it (its console then waits for the worker's lines).
func TestWorkerOf(t *testing.T) {
	root := t.TempDir()
	for _, c := range []struct{ config, want string }{
		{"[worker]\ncommand = [\"python3\", \"w.py\", \"--recipe\", \"features\"]\n", "python3 w.py --recipe features"},
		{"[worker]\ncommand = []\n", ""},
		{"seed = 1\n", ""},
	} {
		w, err := runs.Create(root, "w", c.config, runs.Meta{Status: runs.StatusFinished})
		if err != nil {
			t.Fatal(err)
		}
		id := w.ID()
		w.Close()
		r, err := runs.Open(root, id)
		if err != nil {
			t.Fatal(err)
		}
		if got := workerOf(r); got != c.want {
			t.Errorf("config %q: workerOf = %q, want %q", c.config, got, c.want)
		}
	}
}

package lifecycle

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"selmix/cmd/selmix/internal/selmixtest"
	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/core/npy"
	"selmix/core/train"
	"selmix/runs"
	"selmix/runs/record"
)

// objectiveChangeRun records a run of K=2 classes and four refreshes,
// ten steps apart: min-recall with ψ 0.3, 0.56, then hmean@cov with ψ
// −0.05, 0.1.
func objectiveChangeRun(t *testing.T, root string) string {
	t.Helper()
	rec, err := record.New(root, "switch", "", record.Options{}, runs.Meta{Objective: "min-recall", Policy: "selmix"})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.LogStart(record.Start{Total: 30, K: 2}); err != nil {
		t.Fatal(err)
	}
	st := loop.NewStream()
	done := make(chan error, 1)
	go func() { done <- rec.Follow(context.Background(), st, nil) }()
	h := loop.DefaultHyper()
	for i, v := range []struct {
		obj metric.Objective
		psi float64
	}{{metric.MinRecall, 0.3}, {metric.MinRecall, 0.56}, {metric.HMeanCov, -0.05}, {metric.HMeanCov, 0.1}} {
		h.Objective = v.obj
		rep := metric.Report{K: 2, Prior: []float64{0.5, 0.5}, Recall: []float64{0.5, 0.5}, Coverage: []float64{0.5, 0.5}}
		st.Publish(loop.Snapshot{Kind: loop.KindRefresh, Step: 10 * i, Total: 30, State: loop.Running, Hyper: h,
			Refresh: &loop.Refresh{Step: 10 * i, K: 2, Report: rep, Psi: v.psi, Objectives: make([]float64, len(metric.Objectives())),
				G: make([]float64, 4), P: []float64{0.25, 0.25, 0.25, 0.25},
				Best: true}}) // each is a new best, as the engine flags it: the objective changed at the third

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
	t.Parallel()
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

// readHeadW reads W from an export-head .npz.
func readHeadW(t *testing.T, path string, n int) []float64 {
	t.Helper()
	z, err := npy.OpenNPZ(path)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	a, err := z.Open("W")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	W := make([]float64, n)
	if err := a.ReadFloat64(W); err != nil {
		t.Fatal(err)
	}
	return W
}

// The run store keeps the best checkpoint; the summary, runs show and
// runs ls report test metrics at it beside the final ones; export-head
// --best writes its head. (That its test metrics are its model's, and
// that fork --at best starts and replays from it, is app's TestKeepBest,
// in process.)
func TestKeepBestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	root, id := sharedShortRun(t)
	root = copyRun(t, root, id)
	r, err := runs.Open(root, id)
	if err != nil {
		t.Fatal(err)
	}
	step, state, err := r.BestCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	ck, err := train.ParseCheckpoint(state)
	if err != nil {
		t.Fatal(err)
	}
	h, err := record.Load(r)
	if err != nil {
		t.Fatal(err)
	}
	b := h.Final.Best
	if b == nil || b.Step != step || ck.Step != step || r.Meta.BestStep != step || b.Psi != r.Meta.Best || string(b.Objective) != r.Meta.BestObjective {
		t.Fatalf("best: summary %+v, checkpoint file at %d (engine step %d), run.json %v at %d (%s): want one best",
			b, step, ck.Step, r.Meta.Best, r.Meta.BestStep, r.Meta.BestObjective)
	}
	// The best is the highest validation ψ among the refreshes.
	for _, rf := range h.Refreshes {
		if rf.Stats.Psi > b.Psi {
			t.Errorf("refresh at step %d has ψ %v above the best %v", rf.Step, rf.Stats.Psi, b.Psi)
		}
	}

	show := selmixtest.Run(t, "runs", "show", "--runs", root, id)
	for _, want := range []string{
		"test at best",
		fmt.Sprintf("best: ψ %s %.4f on validation at step %d", b.Objective, b.Psi, step),
		fmt.Sprintf("best ckpt step %d", step),
	} {
		if !strings.Contains(show, want) {
			t.Errorf("runs show lacks %q:\n%s", want, show)
		}
	}
	i := slices.Index(metric.Objectives(), b.Objective)
	ls := selmixtest.Run(t, "runs", "ls", "--runs", root)
	if want := fmt.Sprintf("%.4f      %.4f (%d)", h.Final.TestObjAfter[i], b.TestObj[i], step); !strings.Contains(ls, "TEST ψ AT BEST") || !strings.Contains(ls, want) {
		t.Errorf("runs ls lacks test ψ at the end and at best %q:\n%s", want, ls)
	}

	// export-head --best writes the best checkpoint's head.
	npz := filepath.Join(t.TempDir(), "best.npz")
	out := selmixtest.Run(t, "export-head", "--runs", root, id, "--best", "--out", npz)
	if !strings.Contains(out, fmt.Sprintf("best checkpoint (step %d)", step)) {
		t.Errorf("export-head --best says:\n%s", out)
	}
	if got := readHeadW(t, npz, ck.D*ck.K); !reflect.DeepEqual(got, ck.Trainer.W) {
		t.Errorf("export-head --best wrote another head than the best checkpoint's")
	}
	if code, _, stderr := runCLI("export-head", "--runs", root, id, "--best", "--step", "5", "--out", npz); code != 2 || !strings.Contains(stderr, "give one") {
		t.Errorf("export-head --best --step: exit %d, %q; want 2 and a one-line reason", code, stderr)
	}

	if code, _, stderr := runCLI("fork", "--runs", root, id, "--at", "bset"); code != 2 || !strings.Contains(stderr, `--at "bset": want a step ≥ 0 or best`) {
		t.Errorf("fork --at bset: exit %d, %q", code, stderr)
	}
}

// A run written before selmix kept the best model has no best
// checkpoint: export-head --best and fork --at best say so in one line.
func TestNoBestCheckpoint(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	id := objectiveChangeRun(t, root)
	for _, args := range [][]string{
		{"export-head", "--runs", root, id, "--best", "--out", filepath.Join(root, "h.npz")},
		{"fork", "--runs", root, id, "--at", "best"},
	} {
		code, _, stderr := runCLI(args...)
		if code != 2 || !strings.Contains(stderr, "no best checkpoint") || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line saying there is no best checkpoint", args, code, stderr)
		}
	}
}

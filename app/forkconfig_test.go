package app

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"testing"

	"selmix/core/experiment"
	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/core/worker/workertest"
	"selmix/runs"
	"selmix/runs/export"
	"selmix/runs/record"
)

// A fork records what it runs. The parent's objective and s were changed
// live before the fork's checkpoint; a fork made as the workbench makes
// it (selmix fork through Session.Fork, with only what the form changed)
// runs with them, and its config.toml, run.json and runs compare say so,
// with no control logged for what it did not change. A fork that sets s
// back to the parent's configured value logs that change and records it.
// A replay of each is identical.
func TestForkRecordsLiveChanges(t *testing.T) {
	t.Setenv(workertest.Env, "ok")
	root := t.TempDir()
	var out bytes.Buffer
	var id string
	s := session(root, &out, &id)
	c := fakeConfig(t)
	if c.Finetune.Objective != metric.MinRecall || c.Finetune.S != 1 {
		t.Fatalf("the fake run's objective %s, s %v: want min-recall and 1 before the live changes", c.Finetune.Objective, c.Finetune.S)
	}
	s.View = sendAt(
		loop.Control{Op: loop.OpSet, Key: "objective", Value: string(metric.MeanRecallCov), At: 10, Source: loop.SourceUser},
		loop.Control{Op: loop.OpSet, Key: "s", Value: "2", At: 10, Source: loop.SourceUser})
	if err := s.Start(context.Background(), c, Origin{}); err != nil {
		t.Fatalf("Start: %v\n%s", err, out.String())
	}
	s.View = nil
	parent := id

	for _, tc := range []struct {
		name    string
		sets    []string
		obj     metric.Objective
		s       float64
		control bool // whether the fork logs a set of s at its step
	}{
		{"steps changed", []string{"finetune.steps=40"}, metric.MeanRecallCov, 2, false},
		{"s back to the configured value", []string{"finetune.s=1", "finetune.steps=40"}, metric.MeanRecallCov, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out.Reset()
			var fid string
			fs := session(root, &out, &fid)
			if err := fs.Fork(context.Background(), parent, Checkpoint{Step: 20}, tc.sets); err != nil {
				t.Fatalf("Fork: %v\n%s", err, out.String())
			}
			fr, err := runs.Open(root, fid)
			if err != nil {
				t.Fatal(err)
			}
			fc, err := RunConfig(fr)
			if err != nil {
				t.Fatal(err)
			}
			if fc.Finetune.Objective != tc.obj || fc.Finetune.S != tc.s || fc.Finetune.Steps != 40 {
				t.Errorf("the fork's config.toml: objective %s, s %v, steps %d; want %s, %v, 40", fc.Finetune.Objective, fc.Finetune.S, fc.Finetune.Steps, tc.obj, tc.s)
			}
			if fr.Meta.Objective != string(tc.obj) {
				t.Errorf("the fork's run.json: objective %s, want %s", fr.Meta.Objective, tc.obj)
			}
			fh, err := record.Load(fr)
			if err != nil {
				t.Fatal(err)
			}
			for _, rf := range fh.Refreshes {
				if rf.Hyper.Objective != fc.Finetune.Objective || rf.Hyper.S != fc.Finetune.S {
					t.Fatalf("the fork's refresh at step %d ran %s at s = %v; its config.toml says %s at s = %v",
						rf.Step, rf.Hyper.Objective, rf.Hyper.S, fc.Finetune.Objective, fc.Finetune.S)
				}
			}
			var sets []string
			for _, a := range fh.Controls {
				sets = append(sets, fmt.Sprintf("%s at %d", a.Control, a.Step))
			}
			want := 0
			if tc.control {
				want = 1
			}
			if len(fh.Controls) != want || tc.control && (fh.Controls[0].Control.Key != "s" || fh.Controls[0].Control.Value != "1" || fh.Controls[0].Step != 20) {
				t.Errorf("the fork's controls %v; want %d (set s=1 at 20 where it changes s)", sets, want)
			}

			// runs compare reads config.toml: beside a run configured as
			// the fork runs, it shows no difference of objective or s.
			pr, err := runs.Open(root, parent)
			if err != nil {
				t.Fatal(err)
			}
			var recs []export.Recorded
			for _, r := range []*runs.Run{pr, fr} {
				rec, err := export.Load(r)
				if err != nil {
					t.Fatal(err)
				}
				recs = append(recs, rec)
			}
			got := map[string]string{}
			for _, d := range export.Compare(recs).Config {
				if d.Values[1] != nil {
					got[d.Key] = *d.Values[1]
				}
			}
			if got["finetune.objective"] != string(tc.obj) {
				t.Errorf("runs compare: the fork's finetune.objective %q, want %q", got["finetune.objective"], tc.obj)
			}
			if v, ok := got["finetune.s"]; tc.s != c.Finetune.S && v != strconv.FormatFloat(tc.s, 'g', -1, 64) || tc.s == c.Finetune.S && ok {
				t.Errorf("runs compare: the fork's finetune.s %q (differs from the parent's: %v), want %v", v, ok, tc.s)
			}
			replayIdentical(t, fs, root, fid)
		})
	}
}

// A fork of a run whose engine changes its own learning rate or refresh
// interval (finetune.adapt) records the researcher's, which the engine
// keeps adapting within, not the engine's choice at the checkpoint; it
// logs no control for them and replays identically.
func TestForkRecordsAdaptBase(t *testing.T) {
	t.Setenv(workertest.Env, "ok")
	for _, mode := range []string{"refresh", "lr"} {
		t.Run(mode, func(t *testing.T) {
			root := t.TempDir()
			c := fakeConfig(t)
			// A step large enough that the trust region binds (TestAdaptReplays).
			for _, kv := range []string{"finetune.adapt=" + mode, "finetune.lr=1", "finetune.objective=mean-recall"} {
				if err := experiment.Set(&c, kv); err != nil {
					t.Fatal(err)
				}
			}
			id := start(t, root, c)
			pr, _ := runs.Open(root, id)
			ph, err := record.Load(pr)
			if err != nil {
				t.Fatal(err)
			}
			adapted := false
			for _, a := range ph.Controls {
				adapted = adapted || a.Control.Auto() && a.Step <= 20
			}
			if !adapted {
				t.Fatalf("finetune.adapt=%s changed nothing by step 20 (controls %+v): the fork below would prove nothing", mode, ph.Controls)
			}
			var out bytes.Buffer
			var fid string
			s := session(root, &out, &fid)
			if err := s.Fork(context.Background(), id, Checkpoint{Step: 20}, nil); err != nil {
				t.Fatalf("Fork: %v\n%s", err, out.String())
			}
			fr, _ := runs.Open(root, fid)
			fc, err := RunConfig(fr)
			if err != nil {
				t.Fatal(err)
			}
			if fc.Finetune.LR != c.Finetune.LR || fc.Finetune.Refresh != c.Finetune.Refresh {
				t.Errorf("the fork's config.toml: lr %v, refresh %d; want the researcher's %v, %d", fc.Finetune.LR, fc.Finetune.Refresh, c.Finetune.LR, c.Finetune.Refresh)
			}
			fh, err := record.Load(fr)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range fh.Controls {
				if !a.Control.Auto() {
					t.Errorf("the unchanged fork logged %s at %d", a.Control.Tagged(), a.Step)
				}
			}
			replayIdentical(t, s, root, fid)
		})
	}
}

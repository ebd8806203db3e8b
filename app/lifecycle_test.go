package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"selmix/core/experiment"
	"selmix/core/local"
	"selmix/core/loop"
	"selmix/core/npy"
	"selmix/core/train"
	"selmix/core/worker/workertest"
	"selmix/runs"
	"selmix/runs/record"
	"selmix/runs/runstest"
)

// The lifecycle of cmd/selmix/internal/lifecycle, in process: the same
// assertions on a Session driving the fake worker (a few milliseconds a
// run) instead of the binary driving the torch worker.

// readOutcome and sameOutcome are runstest's, with a reference that
// logged enough to tell runs apart.
func readOutcome(t *testing.T, root, id string) runstest.Outcome {
	return runstest.ReadOutcome(t, root, id)
}

func sameOutcome(t *testing.T, what string, got, want runstest.Outcome) {
	t.Helper()
	if len(want.Events) < 3 {
		t.Fatalf("%s: the reference logged only %d events", what, len(want.Events))
	}
	runstest.SameOutcome(t, what, got, want)
}

// session is a quiet Session on root whose last new run's id is *id.
func session(root string, out *bytes.Buffer, id *string) *Session {
	return &Session{Root: root, Out: out, Quiet: true, Created: func(s string) { *id = s }}
}

// start runs c to its end on root and returns its id.
func start(t *testing.T, root string, c experiment.Config) string {
	t.Helper()
	var out bytes.Buffer
	var id string
	if err := session(root, &out, &id).Start(context.Background(), c, Origin{}); err != nil {
		t.Fatalf("Start: %v\n%s", err, out.String())
	}
	return id
}

// ckptFile is run id's checkpoint file at step.
func ckptFile(root, id string, step int) string {
	return filepath.Join(root, id, "checkpoints", fmt.Sprintf("step-%07d.ckpt", step))
}

// tearFinal cuts run id's final event (a crash in its last moment).
func tearFinal(t *testing.T, root, id string) {
	t.Helper()
	p := filepath.Join(root, id, "events.jsonl")
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, st.Size()-20); err != nil {
		t.Fatal(err)
	}
}

// copyRun copies run id, checkpoints too, into a new root.
func copyRun(t *testing.T, root, id string) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(filepath.Join(dst, id), os.DirFS(filepath.Join(root, id))); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dst, id, "lock"))
	return dst
}

// A run stopped at a refresh and resumed logs and concludes exactly what
// the uninterrupted run does, event for event.
func TestResumeEqualsUninterrupted(t *testing.T) {
	t.Setenv(workertest.Env, "ok")
	c := fakeConfig(t)
	root := t.TempDir()
	want := readOutcome(t, root, start(t, root, c))

	for _, at := range []int{10, 20} {
		t.Run(fmt.Sprintf("stopped at %d", at), func(t *testing.T) {
			var out bytes.Buffer
			var id string
			s := session(root, &out, &id)
			// A viewer that stops the run at a step, as `selmix stop` would.
			s.View = func(ctx context.Context, eng *train.Engine, st *loop.Stream, _ ViewInfo) error {
				eng.Send(loop.Control{Op: loop.OpStop, At: at})
				for _, ok := st.Next(ctx); ok; _, ok = st.Next(ctx) {
				}
				return nil
			}
			if err := s.Start(context.Background(), c, Origin{}); err != nil {
				t.Fatalf("Start: %v\n%s", err, out.String())
			}
			r, err := runs.Open(root, id)
			if err != nil {
				t.Fatal(err)
			}
			if st := r.EffectiveStatus(); st != runs.StatusStopped {
				t.Fatalf("status %s after a stop at %d, want stopped:\n%s", st, at, out.String())
			}
			out.Reset()
			s.View = nil
			if err := s.Resume(context.Background(), id); err != nil {
				t.Fatalf("Resume: %v\n%s", err, out.String())
			}
			if want := fmt.Sprintf("resuming run %s from step %d (", id, at); !strings.Contains(out.String(), want) {
				t.Errorf("resume output lacks %q:\n%s", want, out.String())
			}
			sameOutcome(t, "resumed run", readOutcome(t, root, id), want)
		})
	}
}

// readHead reads W and b from an export-head .npz, or from the pair
// stem_W.npy, stem_b.npy.
func readHead(t *testing.T, out string, d, K int) (W, b []float64) {
	t.Helper()
	W, b = make([]float64, d*K), make([]float64, K)
	if stem, ok := strings.CutSuffix(out, ".npy"); ok {
		for _, x := range []struct {
			name string
			dst  []float64
		}{{"W", W}, {"b", b}} {
			a, err := npy.Open(stem + "_" + x.name + ".npy")
			if err != nil {
				t.Fatal(err)
			}
			if err := a.ReadFloat64(x.dst); err != nil {
				t.Fatal(err)
			}
			a.Close()
		}
		return W, b
	}
	z, err := npy.OpenNPZ(out)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	for _, x := range []struct {
		name string
		dst  []float64
	}{{"W", W}, {"b", b}} {
		a, err := z.Open(x.name)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.ReadFloat64(x.dst); err != nil {
			t.Fatal(err)
		}
		a.Close()
	}
	return W, b
}

// ExportHead writes the head of the checkpoint selected — the latest, one
// at or before a step, the best — exactly as that checkpoint holds it,
// as .npz and as a .npy pair.
func TestExportHeadEqualsCheckpoint(t *testing.T) {
	t.Setenv(workertest.Env, "ok")
	root := t.TempDir()
	id := start(t, root, fakeConfig(t))
	r, err := runs.Open(root, id)
	if err != nil {
		t.Fatal(err)
	}
	bestStep, bestState, err := r.BestCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sel      Checkpoint
		step     int
		ext, say string
	}{
		{Latest, 30, ".npz", "from run " + id + " step 30\n"},
		{Latest, 30, ".npy", "_W.npy ([8 4])\n"},
		{Checkpoint{Step: 25}, 20, ".npz", "from run " + id + " step 20\n"},
		{Checkpoint{Best: true}, bestStep, ".npz", fmt.Sprintf("from run %s best checkpoint (step %d)\n", id, bestStep)},
	} {
		t.Run(fmt.Sprintf("%+v%s", tc.sel, tc.ext), func(t *testing.T) {
			state := bestState
			if !tc.sel.Best {
				b, err := os.ReadFile(ckptFile(root, id, tc.step))
				if err != nil {
					t.Fatal(err)
				}
				state = b
			}
			ck, err := local.ParseCheckpoint(state)
			if err != nil {
				t.Fatal(err)
			}
			if ck.D != 8 || ck.K != 4 || len(ck.Trainer.W) != 32 || len(ck.Trainer.B) != 4 {
				t.Fatalf("checkpoint head %d×%d, W %d, b %d: want the fake worker's 8×4", ck.D, ck.K, len(ck.Trainer.W), len(ck.Trainer.B))
			}
			out := filepath.Join(t.TempDir(), "head"+tc.ext)
			var w bytes.Buffer
			if err := ExportHead(&w, root, id, tc.sel, out); err != nil {
				t.Fatalf("ExportHead: %v", err)
			}
			if !strings.Contains(w.String(), tc.say) {
				t.Errorf("ExportHead says %q, want %q in it", w.String(), tc.say)
			}
			W, b := readHead(t, out, ck.D, ck.K)
			if !reflect.DeepEqual(W, ck.Trainer.W) || !reflect.DeepEqual(b, ck.Trainer.B) {
				t.Errorf("exported head differs from the step-%d checkpoint's:\n W %v\nwant %v\n b %v\nwant %v", tc.step, W, ck.Trainer.W, b, ck.Trainer.B)
			}
		})
	}
	// The heads differ between checkpoints: the test above can tell them apart.
	a, _ := os.ReadFile(ckptFile(root, id, 20))
	b, _ := os.ReadFile(ckptFile(root, id, 30))
	ca, err1 := local.ParseCheckpoint(a)
	cb, err2 := local.ParseCheckpoint(b)
	if err := errors.Join(err1, err2); err != nil || reflect.DeepEqual(ca.Trainer.W, cb.Trainer.W) {
		t.Errorf("the heads at steps 20 and 30 are equal (%v): the run does not train", err)
	}
	if err := ExportHead(&bytes.Buffer{}, root, id, Latest, filepath.Join(t.TempDir(), "head.txt")); ExitCode(err) != ExitBadInput {
		t.Errorf("ExportHead to a .txt: %v (exit %d), want exit 2", err, ExitCode(err))
	}
}

// A fork at a step starts from the checkpoint at or before it: with no
// change it goes on exactly as its parent did (same refreshes after the
// fork step, same final test metrics); with one, that change is its only
// control, at the fork step, and its first refresh uses it. A replay of
// either reports identity and logs the same events.
func TestForkStartsAtCheckpoint(t *testing.T) {
	t.Setenv(workertest.Env, "ok")
	root := t.TempDir()
	c := fakeConfig(t)
	id := start(t, root, c)
	pr, err := runs.Open(root, id)
	if err != nil {
		t.Fatal(err)
	}
	ph, err := record.Load(pr)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	var fid string
	s := session(root, &out, &fid)
	ctx := context.Background()

	if err := s.Fork(ctx, id, Checkpoint{Step: 25}, nil); err != nil {
		t.Fatalf("Fork: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "forking run "+id+" at step 20\n") {
		t.Errorf("fork output:\n%s", out.String())
	}
	fr, err := runs.Open(root, fid)
	if err != nil {
		t.Fatal(err)
	}
	if fr.Meta.Parent != id || fr.Meta.ParentStep != 20 || fr.Meta.ParentBest {
		t.Errorf("fork at 25 records parent %q at %d (best %v), want %q at 20 (the checkpoint at or before)", fr.Meta.Parent, fr.Meta.ParentStep, fr.Meta.ParentBest, id)
	}
	fh, err := record.Load(fr)
	if err != nil {
		t.Fatal(err)
	}
	if len(fh.Controls) != 0 {
		t.Errorf("an unchanged fork logged controls %+v", fh.Controls)
	}
	// The parent's refreshes after step 20, the fork's all of them.
	var tail []string
	for _, rf := range ph.Refreshes {
		if rf.Step >= 20 {
			rf.Time, rf.Loss = time.Time{}, nil
			tail = append(tail, mustJSON(rf))
		}
	}
	var got []string
	for _, rf := range fh.Refreshes {
		rf.Time, rf.Loss = time.Time{}, nil
		got = append(got, mustJSON(rf))
	}
	if len(tail) == 0 || !reflect.DeepEqual(got, tail[:min(len(tail), len(got))]) || len(got) != len(tail) {
		t.Errorf("the fork's refreshes differ from the parent's after step 20:\n got  %.400s\n want %.400s", got, tail)
	}
	if !reflect.DeepEqual(fh.Final.TestAfter, ph.Final.TestAfter) || !reflect.DeepEqual(fh.Final.ValAfter, ph.Final.ValAfter) || fh.Final.Steps != 30 {
		t.Errorf("the unchanged fork ends at step %d with test %+v, want 30 and the parent's %+v", fh.Final.Steps, fh.Final.TestAfter, ph.Final.TestAfter)
	}

	// A change: the fork's only control, and its first refresh has it.
	out.Reset()
	if err := s.Fork(ctx, id, Checkpoint{Step: 10}, []string{"finetune.s=3"}); err != nil {
		t.Fatalf("Fork: %v\n%s", err, out.String())
	}
	cr, err := runs.Open(root, fid)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := record.Load(cr)
	if err != nil {
		t.Fatal(err)
	}
	if cr.Meta.ParentStep != 10 || len(ch.Controls) != 1 || ch.Controls[0].Control.Key != "s" || ch.Controls[0].Step != 10 {
		t.Errorf("fork at 10 with s=3: parent step %d, controls %+v; want 10 and one set s at 10", cr.Meta.ParentStep, ch.Controls)
	}
	if len(ch.Refreshes) == 0 || ch.Refreshes[0].Hyper.S != 3 || ch.Refreshes[0].Step != 10 {
		t.Errorf("the fork's first refresh does not use s=3 at step 10: %+v", ch.Refreshes[:min(1, len(ch.Refreshes))])
	}
	if ph.Refreshes[1].Hyper.S == 3 {
		t.Fatalf("the parent had s=3 already: the fork changed nothing")
	}

	for _, f := range []string{fr.Meta.ID, cr.Meta.ID} {
		replayIdentical(t, s, root, f)
	}
}

// replayIdentical replays run id with s, checks that it reports identity
// and that the replay logged the same events and summary.
func replayIdentical(t *testing.T, s *Session, root, id string) {
	t.Helper()
	var out bytes.Buffer
	o := *s
	o.Out = &out
	if err := o.Replay(context.Background(), id); err != nil {
		t.Fatalf("Replay %s: %v\n%s", id, err, out.String())
	}
	m := regexp.MustCompile(`(?m)^replay (\S+) is identical to ` + regexp.QuoteMeta(id) + `: `).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("replay of %s does not report identity:\n%s", id, out.String())
	}
	rid := m[1]
	got, want := readOutcome(t, root, rid), readOutcome(t, root, id)
	if want.Best == "none" || got.Best == "none" {
		// A fork keeps a best only once it beats its parent's: compare it
		// where both have one, through the summary otherwise.
		got.Best, want.Best = "", ""
	}
	sameOutcome(t, "replay of "+id, got, want)
}

// A replay of a run, with controls sent along the way, reports identity
// and logs what the run did, event for event; a run whose outcome was
// changed on disk is reported as differing.
func TestReplayIdentical(t *testing.T) {
	t.Setenv(workertest.Env, "ok")
	root := t.TempDir()
	var out bytes.Buffer
	var id string
	s := session(root, &out, &id)
	s.View = sendAt(loop.Control{Op: loop.OpSet, Key: "s", Value: "4", At: 15, Source: loop.SourceUser})
	if err := s.Start(context.Background(), fakeConfig(t), Origin{}); err != nil {
		t.Fatalf("Start: %v\n%s", err, out.String())
	}
	s.View = nil
	r, _ := runs.Open(root, id)
	h, err := record.Load(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Controls) != 1 || h.Controls[0].Step != 15 {
		t.Fatalf("the run's controls %+v, want s=4 at 15", h.Controls)
	}
	replayIdentical(t, s, root, id)

	// The same run with another control logged: the replay differs.
	alt := copyRun(t, root, id)
	p := filepath.Join(alt, id, "events.jsonl")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	n := bytes.Count(b, []byte(`"value":"4"`))
	if n == 0 {
		t.Fatalf("no control s=4 in the log:\n%s", b)
	}
	b = bytes.ReplaceAll(b, []byte(`"value":"4"`), []byte(`"value":"1"`))
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	s.Root = alt
	err = s.Replay(context.Background(), id)
	if err == nil || !strings.Contains(err.Error(), " differs from "+id+":") || !strings.Contains(err.Error(), "final summary:") {
		t.Errorf("replay of a run with its control changed on disk: %v, want it to differ in the final summary\n%s", err, out.String())
	}
}

// finetune.adapt's decisions are logged as automatic controls, and a
// replay, which recomputes rather than resends them, reproduces the run.
func TestAdaptReplays(t *testing.T) {
	t.Setenv(workertest.Env, "ok")
	for _, mode := range []string{"refresh", "lr"} {
		t.Run(mode, func(t *testing.T) {
			root := t.TempDir()
			c := fakeConfig(t)
			// A step large enough that the trust region binds.
			for _, kv := range []string{"finetune.adapt=" + mode, "finetune.lr=1", "finetune.objective=mean-recall"} {
				if err := experiment.Set(&c, kv); err != nil {
					t.Fatal(err)
				}
			}
			id := start(t, root, c)
			r, _ := runs.Open(root, id)
			h, err := record.Load(r)
			if err != nil {
				t.Fatal(err)
			}
			auto := 0
			for _, a := range h.Controls {
				if a.Control.Auto() {
					auto++
				}
			}
			if auto == 0 {
				t.Fatalf("finetune.adapt=%s logged no automatic control (controls %+v)", mode, h.Controls)
			}
			replayIdentical(t, session(root, &bytes.Buffer{}, new(string)), root, id)
		})
	}
}

// A damaged newest checkpoint is named and passed over for the one
// before it by fork, resume and export-head; the result is exactly what
// the intact run gets from there. With every checkpoint damaged, resume
// starts over and still ends where the run did.
func TestDamagedCheckpointFallback(t *testing.T) {
	t.Setenv(workertest.Env, "ok")
	shared := t.TempDir()
	id := start(t, shared, fakeConfig(t))
	want := readOutcome(t, shared, id)
	flip := func(p string) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0xff
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fallback := func(t *testing.T, out, root string) {
		t.Helper()
		line := "damaged checkpoint " + ckptFile(root, id, 30) + " (not a valid selmix engine checkpoint: checksum mismatch (truncated or corrupted)): using the one at step 20\n"
		if !strings.Contains(out, line) {
			t.Errorf("output does not say\n%s\n%s", line, out)
		}
	}
	t.Run("fork", func(t *testing.T) {
		root := copyRun(t, shared, id)
		flip(ckptFile(root, id, 30))
		var out bytes.Buffer
		var got, ref string
		if err := session(root, &out, &got).Fork(context.Background(), id, Latest, nil); err != nil {
			t.Fatalf("Fork: %v\n%s", err, out.String())
		}
		fallback(t, out.String(), root)
		intact := copyRun(t, shared, id)
		if err := session(intact, &bytes.Buffer{}, &ref).Fork(context.Background(), id, Checkpoint{Step: 20}, nil); err != nil {
			t.Fatal(err)
		}
		if fr, _ := runs.Open(root, got); fr == nil || fr.Meta.ParentStep != 20 {
			t.Errorf("the fork past the damaged checkpoint is not from step 20: %+v", fr)
		}
		sameOutcome(t, "fork past a damaged checkpoint", readOutcome(t, root, got), readOutcome(t, intact, ref))
	})
	t.Run("resume", func(t *testing.T) {
		root := copyRun(t, shared, id)
		tearFinal(t, root, id)
		flip(ckptFile(root, id, 30))
		var out bytes.Buffer
		if err := session(root, &out, new(string)).Resume(context.Background(), id); err != nil {
			t.Fatalf("Resume: %v\n%s", err, out.String())
		}
		fallback(t, out.String(), root)
		if !strings.Contains(out.String(), "resuming run "+id+" from step 20 (") {
			t.Errorf("resume did not go on from step 20:\n%s", out.String())
		}
		sameOutcome(t, "resume past a damaged checkpoint", readOutcome(t, root, id), want)
	})
	t.Run("export-head", func(t *testing.T) {
		root := copyRun(t, shared, id)
		flip(ckptFile(root, id, 30))
		var out bytes.Buffer
		p := filepath.Join(t.TempDir(), "h.npz")
		if err := ExportHead(&out, root, id, Latest, p); err != nil {
			t.Fatalf("ExportHead: %v\n%s", err, out.String())
		}
		fallback(t, out.String(), root)
		b, _ := os.ReadFile(ckptFile(root, id, 20))
		ck, err := local.ParseCheckpoint(b)
		if err != nil {
			t.Fatal(err)
		}
		if W, _ := readHead(t, p, ck.D, ck.K); !reflect.DeepEqual(W, ck.Trainer.W) {
			t.Errorf("export-head past the damaged checkpoint wrote another head than step 20's")
		}
	})
	t.Run("resume, every checkpoint damaged", func(t *testing.T) {
		root := copyRun(t, shared, id)
		tearFinal(t, root, id)
		for _, s := range []int{10, 20, 30} {
			if err := os.Truncate(ckptFile(root, id, s), 0); err != nil {
				t.Fatal(err)
			}
		}
		var out bytes.Buffer
		if err := session(root, &out, new(string)).Resume(context.Background(), id); err != nil {
			t.Fatalf("Resume: %v\n%s", err, out.String())
		}
		if !strings.Contains(out.String(), "no valid checkpoint: "+ckptFile(root, id, 30)+" (not a valid selmix engine checkpoint: truncated (0 bytes)); ") ||
			!strings.Contains(out.String(), ": starting over from step 0\n") || !strings.Contains(out.String(), "resuming run "+id+" from step 0 (") {
			t.Errorf("resume does not name the damaged checkpoints and start over:\n%s", out.String())
		}
		sameOutcome(t, "resume with no valid checkpoint", readOutcome(t, root, id), want)
	})
}

// record.best keeps the checkpoint at the best validation ψ: its step is
// the refresh with the highest ψ (the first of equals), the summary and
// run.json agree on it, its test metrics are what a fork of it that
// trains no further concludes, and a fork --at best records and replays
// from it.
func TestKeepBest(t *testing.T) {
	t.Setenv(workertest.Env, "ok")
	root := t.TempDir()
	id := start(t, root, fakeConfig(t))
	r, err := runs.Open(root, id)
	if err != nil {
		t.Fatal(err)
	}
	step, state, err := r.BestCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	ck, err := local.ParseCheckpoint(state)
	if err != nil {
		t.Fatal(err)
	}
	h, err := record.Load(r)
	if err != nil {
		t.Fatal(err)
	}
	b := h.Final.Best
	if b == nil || b.Step != step || ck.Step != step || r.Meta.BestStep != step || b.Psi != r.Meta.Best || string(b.Objective) != r.Meta.BestObjective {
		t.Fatalf("best: summary %+v, file at %d (engine step %d), run.json %v at %d: want one best", b, step, ck.Step, r.Meta.Best, r.Meta.BestStep)
	}
	// An independent argmax over the logged refreshes.
	argmax, psi := -1, 0.0
	for _, rf := range h.Refreshes {
		if argmax < 0 || rf.Stats.Psi > psi {
			argmax, psi = rf.Step, rf.Stats.Psi
		}
	}
	if argmax != step || psi != b.Psi {
		t.Errorf("best checkpoint at step %d ψ %v; the refreshes' highest ψ is %v at step %d", step, b.Psi, psi, argmax)
	}

	var out bytes.Buffer
	var fid string
	s := session(root, &out, &fid)
	wantTest := h.Final.TestBefore
	if step > 0 {
		if err := s.Fork(context.Background(), id, Checkpoint{Best: true}, []string{fmt.Sprintf("finetune.steps=%d", step)}); err != nil {
			t.Fatalf("Fork --at best: %v\n%s", err, out.String())
		}
		fr, _ := runs.Open(root, fid)
		fh, err := record.Load(fr)
		if err != nil {
			t.Fatal(err)
		}
		wantTest = fh.Final.TestAfter
	}
	if !reflect.DeepEqual(b.Test.Recall, wantTest.Recall) || b.Test.MinRecall != wantTest.MinRecall || b.Test.MeanRecall != wantTest.MeanRecall {
		t.Errorf("test at best = %+v,\nthe best checkpoint's model gives %+v", b.Test, wantTest)
	}

	out.Reset()
	if err := s.Fork(context.Background(), id, Checkpoint{Best: true}, []string{"finetune.s=3", fmt.Sprintf("finetune.steps=%d", step+20)}); err != nil {
		t.Fatalf("Fork --at best: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), fmt.Sprintf("forking run %s at its best checkpoint (step %d)\n", id, step)) {
		t.Errorf("fork --at best says:\n%s", out.String())
	}
	fr, _ := runs.Open(root, fid)
	if fr.Meta.Parent != id || fr.Meta.ParentStep != step || !fr.Meta.ParentBest {
		t.Errorf("fork --at best records parent %q at %d (best %v), want %q at %d from its best", fr.Meta.Parent, fr.Meta.ParentStep, fr.Meta.ParentBest, id, step)
	}
	replayIdentical(t, s, root, fid)
}

// sendAt is a viewer that sends cs and watches the run to its end.
func sendAt(cs ...loop.Control) Viewer {
	return func(ctx context.Context, eng *train.Engine, st *loop.Stream, _ ViewInfo) error {
		for _, c := range cs {
			eng.Send(c)
		}
		for _, ok := st.Next(ctx); ok; _, ok = st.Next(ctx) {
		}
		return nil
	}
}

// Controls survive an interruption: one acknowledged before the
// checkpoint a run resumes from is in that checkpoint's state, one
// acknowledged after it is sent again from the log at its step. Either
// way the resumed run logs and concludes what the uninterrupted run with
// that control did.
func TestResumeKeepsControls(t *testing.T) {
	t.Setenv(workertest.Env, "ok")
	c := fakeConfig(t)
	set := loop.Control{Op: loop.OpSet, Key: "s", Value: "4", Source: loop.SourceUser}
	for _, at := range []int{15, 25} {
		t.Run(fmt.Sprintf("control at %d", at), func(t *testing.T) {
			root := t.TempDir()
			var out bytes.Buffer
			var ref string
			s := session(root, &out, &ref)
			ctl := set
			ctl.At = at
			s.View = sendAt(ctl)
			if err := s.Start(context.Background(), c, Origin{}); err != nil {
				t.Fatalf("Start: %v\n%s", err, out.String())
			}
			want := readOutcome(t, root, ref)
			if n := strings.Count(strings.Join(want.Events, "\n"), fmt.Sprintf(`control@%d {"op":"set","key":"s","value":"4"`, at)); n != 1 {
				t.Fatalf("the reference logged the control at %d %d times", at, n)
			}

			// Stopped at 20, after a control at 15: the checkpoint has it.
			// Crashed at 30 after a control at 25, its last checkpoint
			// lost: the log has it.
			var id string
			s = session(root, &out, &id)
			if at < 20 {
				s.View = sendAt(ctl, loop.Control{Op: loop.OpStop, At: 20})
				if err := s.Start(context.Background(), c, Origin{}); err != nil {
					t.Fatalf("Start: %v\n%s", err, out.String())
				}
			} else {
				s.View = sendAt(ctl)
				if err := s.Start(context.Background(), c, Origin{}); err != nil {
					t.Fatalf("Start: %v\n%s", err, out.String())
				}
				tearFinal(t, root, id)
				if err := os.Remove(ckptFile(root, id, 30)); err != nil {
					t.Fatal(err)
				}
			}
			out.Reset()
			s.View = nil
			if err := s.Resume(context.Background(), id); err != nil {
				t.Fatalf("Resume: %v\n%s", err, out.String())
			}
			if !strings.Contains(out.String(), "resuming run "+id+" from step 20 (") {
				t.Errorf("resume did not go on from step 20:\n%s", out.String())
			}
			// The engine's state at the end, acknowledged controls counted
			// and pending ones listed, is the uninterrupted run's.
			a, err1 := os.ReadFile(ckptFile(root, id, 30))
			b, err2 := os.ReadFile(ckptFile(root, ref, 30))
			if err := errors.Join(err1, err2); err != nil || !bytes.Equal(a, b) {
				t.Errorf("the resumed run's checkpoint at step 30 differs from the uninterrupted run's (%v)", err)
			}
			sameOutcome(t, "resumed run", readOutcome(t, root, id), want)
		})
	}
}

// A fork starts from its parent's state, not its parent's future: a
// control the parent had scheduled ahead (as a replay schedules every
// control it replays) is not applied in a fork taken before it, so a fork
// of a replay is the fork of its original.
func TestForkLeavesParentScheduleBehind(t *testing.T) {
	t.Setenv(workertest.Env, "ok")
	root := t.TempDir()
	var out bytes.Buffer
	var id string
	s := session(root, &out, &id)
	s.View = sendAt(loop.Control{Op: loop.OpSet, Key: "s", Value: "4", At: 25, Source: loop.SourceReplay})
	if err := s.Start(context.Background(), fakeConfig(t), Origin{}); err != nil {
		t.Fatalf("Start: %v\n%s", err, out.String())
	}
	s.View = nil
	r, _ := runs.Open(root, id)
	if h, err := record.Load(r); err != nil || len(h.Controls) != 1 || h.Controls[0].Step != 25 {
		t.Fatalf("the parent's controls %+v (%v), want s=4 at 25", h.Controls, err)
	}
	var fid string
	s.Created = func(x string) { fid = x }
	if err := s.Fork(context.Background(), id, Checkpoint{Step: 20}, nil); err != nil {
		t.Fatalf("Fork: %v\n%s", err, out.String())
	}
	fr, _ := runs.Open(root, fid)
	fh, err := record.Load(fr)
	if err != nil {
		t.Fatal(err)
	}
	if len(fh.Controls) != 0 {
		t.Errorf("a fork at step 20 applied its parent's control scheduled for 25: %+v", fh.Controls)
	}
	replayIdentical(t, s, root, fid)
}

// export-head's --out in a folder that is not there, through a file, or
// naming a folder is bad input, one line naming it, and nothing is read.
func TestExportHeadOutPath(t *testing.T) {
	t.Setenv(workertest.Env, "ok")
	root := t.TempDir()
	id := start(t, root, fakeConfig(t))
	dir := t.TempDir()
	file := filepath.Join(dir, "afile")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ out, want string }{
		{filepath.Join(dir, "missing", "x.npz"), "no such folder"},
		{filepath.Join(dir, "missing", "x.npy"), "no such folder"},
		{filepath.Join(file, "x.npz"), "not a folder"},
		{dir + ".npz", ""},
	} {
		if c.out == dir+".npz" {
			if err := os.Mkdir(c.out, 0o755); err != nil {
				t.Fatal(err)
			}
			c.want = "a folder, not a file"
		}
		err := ExportHead(&bytes.Buffer{}, root, id, Latest, c.out)
		if ExitCode(err) != ExitBadInput || !strings.Contains(err.Error(), c.out) || !strings.HasSuffix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("--out %s: %v (exit %d), want exit 2 and one line naming it, ending %q", c.out, err, ExitCode(err), c.want)
		}
	}
}

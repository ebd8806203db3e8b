package train_test

import (
	"context"
	"errors"
	"math"
	"reflect"
	"testing"

	"gonum.org/v1/gonum/mat"

	"selmix/core/gain"
	"selmix/core/local"
	"selmix/core/loop"
	"selmix/core/train"
)

// previewRun runs the toy problem, pauses it after the refresh at step at
// and there applies the change key=value (none if key is ""), as a
// researcher does who single-steps to a refresh and edits a setting. It
// returns the Basis of that refresh, the hyperparameters in force before
// the change, and the Δψ the engine recorded at each later refresh (nil:
// none).
func previewRun(t *testing.T, at int, key, value string) (*loop.Basis, loop.Hyper, map[int]*float64) {
	t.Helper()
	cfg := toyConfig()
	sp := toySplit(4, 6, 90, 1)
	tr, err := local.New(toyNet(t, sp, cfg.Batch), sp, toySeed)
	if err != nil {
		t.Fatal(err)
	}
	e, err := train.New(cfg, tr)
	if err != nil {
		t.Fatal(err)
	}
	train.SetPace(e, 3) // runs of steps end between refreshes too
	st := e.Subscribe()
	if at == 0 {
		e.Send(loop.Control{Op: loop.OpPause}) // taken at step 0, after the first refresh
	} else {
		// Pause a step before, then single-step to the refresh at at.
		e.Send(loop.Control{Op: loop.OpPause, At: at - 1})
		e.Send(loop.Control{Op: loop.OpStep, At: at - 1})
	}
	var (
		basis *loop.Basis
		hyper loop.Hyper
		pred  = map[int]*float64{}
		sent  bool
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			s, ok := st.Next(context.Background())
			if !ok {
				return
			}
			if s.Kind == loop.KindRefresh {
				// A viewer forecasts while the engine trains on (under
				// -race: the Basis is never written).
				if _, err := train.Preview(s.Refresh.Basis, s.Hyper, s.Hyper); err != nil {
					t.Errorf("Preview at step %d: %v", s.Step, err)
				}
			}
			switch {
			case s.Kind == loop.KindRefresh && s.Refresh.Step == at:
				basis, hyper = s.Refresh.Basis, s.Hyper
			case s.Kind == loop.KindRefresh && s.Refresh.Step > at:
				pred[s.Refresh.Step] = s.Refresh.Predicted
			case !sent && s.State == loop.Paused && s.Step == at && basis != nil:
				sent = true
				if key != "" {
					e.Send(loop.Control{Op: loop.OpSet, Key: key, Value: value})
				}
				e.Send(loop.Control{Op: loop.OpResume})
			}
		}
	}()
	if _, err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-done
	if basis == nil || !sent {
		t.Fatalf("no pause at the refresh at step %d", at)
	}
	return basis, hyper, pred
}

// Preview's forecast is the engine's own prediction: change a setting at
// a refresh, and the Δψ_pred the engine records for the interval that
// refresh opened is what Preview forecast for that change from the
// refresh's Basis (the same Decide and the same interval arithmetic; to
// rounding).
func TestPreviewIsTheEnginesPrediction(t *testing.T) {
	for _, c := range []struct {
		name       string
		at         int
		key, value string
	}{
		{"unchanged", 20, "", ""},
		{"s", 20, "s", "25"},
		{"s at step 0", 0, "s", "2"},
		{"objective", 20, "objective", "hmean"},
		{"objective at step 0", 0, "objective", "mean-recall"},
		{"policy", 30, "policy", "uniform"},
		{"omega", 20, "omega", "5"},
		{"objective with coverage", 10, "objective", "mean-recall@cov"},
		{"refresh", 20, "refresh", "7"},
		{"lr", 20, "lr", "0.02"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, cur, preds := previewRun(t, c.at, c.key, c.value)
			next := cur
			if c.key != "" {
				if err := next.Set(c.key, c.value); err != nil {
					t.Fatal(err)
				}
			}
			f, err := train.Preview(b, cur, next)
			if err != nil {
				t.Fatal(err)
			}
			if !f.Next.OK || !f.Now.OK {
				t.Fatalf("no forecast: %s%s", f.Now.Why, f.Next.Why)
			}
			if changed := c.key != ""; changed == (f.Next.Delta == f.Now.Delta) {
				t.Errorf("changed %v, yet Δψ now %.6g and next %.6g", changed, f.Now.Delta, f.Next.Delta)
			}
			got := preds[c.at+f.Steps]
			if got == nil {
				t.Fatalf("the engine recorded no prediction; Preview forecast %.6g", f.Next.Delta)
			}
			if d := math.Abs(f.Next.Delta - *got); d > 1e-12*max(1, math.Abs(*got)) || f.Next.Delta == 0 {
				t.Errorf("Preview: Δψ %.17g, the engine recorded %.17g (|diff| %.3g)", f.Next.Delta, *got, d)
			}
			if f.Next.Objective != next.Objective {
				t.Errorf("forecast in %s's units, want %s's", f.Next.Objective, next.Objective)
			}
		})
	}
}

// A policy that does not mix has no forecast, as the engine records no
// prediction for its steps.
func TestPreviewPolicyWithoutMixup(t *testing.T) {
	b, cur, preds := previewRun(t, 20, "policy", "none")
	next := cur
	next.Policy = "none"
	f, err := train.Preview(b, cur, next)
	if err != nil {
		t.Fatal(err)
	}
	if f.Next.OK || f.Next.Why == "" || !f.Now.OK {
		t.Errorf("forecast %+v: want none under policy none, with a reason, and one now", f)
	}
	if p := preds[30]; p != nil {
		t.Errorf("the engine recorded %v for an interval of policy none", *p)
	}
}

// Preview's arithmetic, against the formula written out: Δψ_pred =
// Σ_k η_k·(1 − μ^k)/(1 − μ) · Σ_ij P_ij G_ij over the interval's steps,
// η_k on the cosine schedule from the refresh's step, P and G from
// Decide; and the interval ends at the run's last step.
func TestPreviewFormula(t *testing.T) {
	b, cur, _ := previewRun(t, 20, "", "")
	for _, c := range []struct {
		name  string
		steps int // the run's steps
		mu    float64
		s     float64
		want  int // the interval's steps
	}{
		{"momentum", 60, 0.9, 10, 10},
		{"no momentum", 60, 0, 3, 10},
		{"interval cut by the run's end", 26, 0.5, 10, 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			bb := *b
			bb.Steps, bb.Momentum = c.steps, c.mu
			next := cur
			next.S = c.s
			f, err := train.Preview(&bb, cur, next)
			if err != nil {
				t.Fatal(err)
			}
			d, err := train.Decide(nil, bb.Stats, next)
			if err != nil {
				t.Fatal(err)
			}
			var eg float64
			for i := range 4 {
				for j := range 4 {
					eg += d.P.At(i, j) * d.G.At(i, j)
				}
			}
			var want float64
			for k := 1; k <= c.want; k++ {
				step := bb.Step + k - 1
				eta := next.LR * (1 + math.Cos(math.Pi*float64(step)/float64(c.steps))) / 2
				m := (1 - math.Pow(c.mu, float64(k))) / (1 - c.mu)
				want += eta * m * eg
			}
			if f.Steps != c.want || math.Abs(f.Next.Delta-want) > 1e-12*math.Abs(want) || math.Abs(f.Next.Gain-eg) > 1e-15 {
				t.Errorf("got Δψ %.15g over %d steps (gain %.15g), want %.15g over %d (gain %.15g)", f.Next.Delta, f.Steps, f.Next.Gain, want, c.want, eg)
			}
		})
	}
	if _, err := train.Preview(nil, cur, cur); err == nil {
		t.Error("Preview without statistics: no error")
	}
	bad := cur
	bad.S = -1
	if _, err := train.Preview(b, cur, bad); err == nil {
		t.Error("Preview of s = -1: no error")
	}
}

// An engine resumed from a checkpoint taken one step past a refresh (a
// population's generation end) forecasts from that refresh's Basis: the
// same statistics, and Preview's forecasts of other settings equal to
// the bit those made from the live refresh (explore = forecast ranks a
// population's candidates this way, selmix sweep forecast).
func TestBasisAfterResume(t *testing.T) {
	for _, c := range []struct {
		name string
		more func(*loop.Config)
	}{
		{"paper", nil},
		{"samples, integral", func(c *loop.Config) {
			c.Form, c.Memory, c.Draws, c.Seed, c.Objective = gain.Samples, loop.MemoryIntegral, 3, 5, "mean-recall@cov"
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sp := toySplit(4, 6, 90, 1)
			cfg := toyConfig()
			if c.more != nil {
				c.more(&cfg)
			}
			e, err := train.New(cfg, toyLocal(t, sp, cfg.Batch))
			if err != nil {
				t.Fatal(err)
			}
			var ckpt []byte
			e.SetCheckpointer(1000, func(step int, b []byte, final bool) error { ckpt = b; return nil })
			e.Send(loop.Control{Op: loop.OpStop, At: 31})
			st := e.Subscribe()
			var live *loop.Basis
			var hyper loop.Hyper
			done := make(chan struct{})
			go func() {
				defer close(done)
				for s, ok := st.Next(context.Background()); ok; s, ok = st.Next(context.Background()) {
					if s.Kind == loop.KindRefresh && s.Refresh.Step == 30 {
						live, hyper = s.Refresh.Basis, s.Hyper
					}
				}
			}()
			if _, err := e.Run(context.Background()); !errors.Is(err, train.ErrStopped) {
				t.Fatalf("stop at 31: %v", err)
			}
			<-done
			if live == nil || ckpt == nil {
				t.Fatal("no refresh at step 30 or no checkpoint at the stop")
			}
			r, err := resumeToy(cfg, sp, ckpt)
			if err != nil {
				t.Fatal(err)
			}
			b := r.Basis()
			if b == nil || b.Step != 30 || b.Steps != live.Steps || b.N != live.N || b.NTest != live.NTest ||
				!mat.Equal(b.C, live.C) || !mat.Equal(b.Z, live.Z) || !mat.Equal(b.W, live.W) ||
				!reflect.DeepEqual(b.B, live.B) || !reflect.DeepEqual(b.Tail, live.Tail) || !reflect.DeepEqual(b.Integral, live.Integral) {
				t.Fatalf("resumed Basis differs from the live refresh's:\n got %+v\nwant %+v", b, live)
			}
			for _, kv := range [][2]string{{"s", "2.5"}, {"lr", "0.02"}, {"beta_min", "0.3"}, {"s", "0.4"}} {
				next := hyper
				if err := next.Set(kv[0], kv[1]); err != nil {
					t.Fatal(err)
				}
				fl, err := train.Preview(live, hyper, next)
				if err != nil {
					t.Fatal(err)
				}
				fr, err := train.Preview(b, hyper, next)
				if err != nil {
					t.Fatal(err)
				}
				if !fl.Next.OK || fr.Next.Delta != fl.Next.Delta || fr.Now.Delta != fl.Now.Delta {
					t.Errorf("%s=%s: resumed forecast %.17g (now %.17g), live %.17g (now %.17g)", kv[0], kv[1], fr.Next.Delta, fr.Now.Delta, fl.Next.Delta, fl.Now.Delta)
				}
			}
		})
	}
}

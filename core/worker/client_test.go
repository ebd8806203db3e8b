package worker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"selmix/core/gain"
	"selmix/core/loop"
	"selmix/core/train"
	"selmix/core/worker"
	"selmix/core/worker/workertest"
)

func toyConfig() loop.Config {
	c := loop.DefaultConfig()
	c.Batch, c.Refresh, c.LR, c.Steps = 16, 10, 0.05, 60
	return c
}

type outcome struct {
	sum    *loop.Summary
	events []string
	head   []float64
	best   []string // each best checkpoint: its step and head
}

// run drives tr to the end (or to a stop at stopAt > 0) and returns what
// it published and its final head; ckpt receives the last checkpoint.
func run(t *testing.T, e *train.Engine, stopAt int, ckpt *[]byte) outcome {
	t.Helper()
	e.SetCheckpointer(2, func(step int, b []byte, final bool) error {
		if ckpt != nil {
			*ckpt = b
		}
		return nil
	})
	var best []string
	e.KeepBest(func(step int, b []byte) error {
		ck, err := train.ParseCheckpoint(b)
		if err != nil {
			return err
		}
		best = append(best, fmt.Sprintf("%d %v %v", step, ck.Trainer.W, ck.Trainer.B))
		return nil
	})
	e.Send(loop.Control{Op: loop.OpSet, Key: "s", Value: "3", At: 25})
	if stopAt > 0 {
		e.Send(loop.Control{Op: loop.OpStop, At: stopAt})
	}
	o := collect(t, e, stopAt)
	o.best = best
	return o
}

// newEngine is the engine of cfg over tr.
func newEngine(t *testing.T, cfg loop.Config, tr train.Trainer) *train.Engine {
	t.Helper()
	e, err := train.New(cfg, tr)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// collect runs e to its end (or to its stop at stopAt > 0) and returns
// what it published (steps left out) and its summary and head.
func collect(t *testing.T, e *train.Engine, stopAt int) outcome {
	t.Helper()
	st := e.Subscribe()
	done := make(chan []string)
	go func() {
		var out []string
		for s, ok := st.Next(context.Background()); ok; s, ok = st.Next(context.Background()) {
			if s.Kind == loop.KindStep || (s.Kind == loop.KindFinal && s.State == loop.Stopped) {
				continue
			}
			k := fmt.Sprintf("%v@%d", s.Kind, s.Step)
			if s.Refresh != nil {
				k += fmt.Sprintf(" psi=%v P0=%v", s.Refresh.Psi, s.Refresh.P[0])
			}
			out = append(out, k)
		}
		done <- out
	}()
	sum, err := e.Run(context.Background())
	if err != nil && !(stopAt > 0 && errors.Is(err, train.ErrStopped)) {
		t.Fatal(err)
	}
	sv, err := e.Trainer().Save()
	if err != nil {
		t.Fatal(err)
	}
	if sum != nil {
		sum.Seconds = 0
	}
	return outcome{sum: sum, events: <-done, head: sv.W}
}

// A run through the worker protocol equals the same run in process, bit
// for bit, supervised and semi-supervised, with SelMix and with the
// baselines' soft-target steps (csst: targets and an adjustment; mislas2:
// class-balanced, backbone frozen); and stopping it, then resuming it in a
// new worker process from the checkpoint, changes nothing.
func TestWorkerRunEqualsLocal(t *testing.T) {
	for _, tc := range []struct {
		mode   string
		policy gain.Policy
		form   gain.Form
	}{{"ok", gain.SelMix, gain.Paper}, {"semi", gain.SelMix, gain.Paper}, {"ok", gain.CSST, gain.Paper}, {"ok", gain.MiSLAS2, gain.Paper},
		// The samples form reads its features through the protocol's
		// features request (float32, as the engine rounds them anyway).
		{"ok", gain.SelMix, gain.Samples}} {
		mode := tc.mode
		cfg := toyConfig()
		cfg.Policy, cfg.Form, cfg.Draws, cfg.Seed = tc.policy, tc.form, 3, 4
		unl := 0
		if mode == "semi" {
			unl = 20
		}
		l, err := workertest.ToyLocal(9, unl)
		if err != nil {
			t.Fatal(err)
		}
		want := run(t, newEngine(t, cfg, l), 0, nil)
		if len(want.events) < 8 || want.sum == nil {
			t.Fatalf("%s: the in-process run published %d events", mode, len(want.events))
		}

		c, err := fake(t, mode, 9, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		got := run(t, newEngine(t, cfg, c), 0, nil)
		c.Close()
		// The worker saves its best checkpoints as the in-process trainer
		// does: at the same refreshes, with the same head.
		if len(want.best) == 0 || want.sum.Best == nil {
			t.Fatalf("%s: the in-process run kept no best", mode)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s/%s/%s: worker run differs from the in-process run\n got %+v\nwant %+v", mode, tc.policy, tc.form, got, want)
		}
		if c.Busy() <= 0 {
			t.Errorf("%s: worker reported no busy time", mode)
		}

		// Stop at 23, resume in a fresh worker from the checkpoint.
		var ckpt []byte
		c1, err := fake(t, mode, 9, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		first := run(t, newEngine(t, cfg, c1), 23, &ckpt)
		c1.Close()
		ck, err := train.ParseCheckpoint(ckpt)
		if err != nil {
			t.Fatal(err)
		}
		if ck.Step != 23 {
			t.Fatalf("%s: stop checkpoint at step %d, want 23", mode, ck.Step)
		}
		c2, err := fake(t, mode, 0, 10*time.Second) // the seed comes from the checkpoint
		if err != nil {
			t.Fatal(err)
		}
		defer c2.Close()
		if err := c2.Load(ck.Trainer); err != nil {
			t.Fatal(err)
		}
		e2, err := train.Resume(cfg, c2, ck)
		if err != nil {
			t.Fatal(err)
		}
		// The control at 25 was pending in the checkpoint: not sent again.
		e2.SetCheckpointer(2, func(int, []byte, bool) error { return nil })
		second := collect(t, e2, 0)
		events := append(first.events, second.events...)
		if !reflect.DeepEqual(second.sum, want.sum) || !reflect.DeepEqual(second.head, want.head) || !reflect.DeepEqual(events, want.events) {
			t.Errorf("%s/%s: stopped and resumed worker run differs\n got %v\nwant %v", mode, tc.policy, events, want.events)
		}
	}
}

// Every way a worker can fail ends the run with one clear line — what
// went wrong, and the worker's last words where it said any — never a
// panic or a hang.
func TestWorkerFailures(t *testing.T) {
	cases := []struct {
		mode    string
		timeout time.Duration
		start   bool     // fails at start
		want    []string // in the error
	}{
		{"protocol", time.Second, true, []string{"protocol 99", "speaks 1"}},
		{"crash", 10 * time.Second, false, []string{"exited during \"train\"", "exit status 3", "CUDA out of memory"}},
		{"hang", 500 * time.Millisecond, false, []string{"did not answer \"evaluate\"", "worker.timeout"}},
		{"garbage", 2 * time.Second, false, []string{"malformed reply to \"evaluate\""}},
		{"shape", 10 * time.Second, false, []string{"array \"C\" is i8 [4 3], want i8 [4 4]"}},
		{"nan", 10 * time.Second, false, []string{"array \"Z\" holds NaN"}},
		{"fail", 10 * time.Second, false, []string{"train: loss is nan at step 4 …"}},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			c, err := fake(t, tc.mode, 1, tc.timeout)
			if tc.start {
				if err == nil {
					c.Close()
					t.Fatal("started")
				}
				checkMsg(t, err, tc.want)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			e, err := train.New(toyConfig(), c)
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Run(context.Background())
			if err == nil {
				t.Fatal("the run did not fail")
			}
			checkMsg(t, err, tc.want)
		})
	}
}

func checkMsg(t *testing.T, err error, want []string) {
	t.Helper()
	msg := err.Error()
	if strings.Contains(msg, "\n") {
		t.Errorf("error spans lines: %q", msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q lacks %q", msg, w)
		}
	}
}

// Stderr lines reach the sink in order, those written before it was set
// included.
func TestWorkerLogLines(t *testing.T) {
	c, err := fake(t, "ok", 1, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Evaluate(train.SplitTest, false); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	c.SetLog(func(line string) { got.WriteString(line + "\n") })
	if _, err := c.Evaluate(train.SplitVal, true); err != nil {
		t.Fatal(err)
	}
	c.Close()
	want := "fake worker: hello\nfake worker: evaluate\nfake worker: evaluate\nfake worker: bye\n"
	if got.String() != want {
		t.Errorf("log lines\n got %q\nwant %q", got.String(), want)
	}
}

func FuzzReadFrame(f *testing.F) {
	var b bytes.Buffer
	worker.WriteFrame(&b, &worker.Frame{Header: map[string]any{"ok": true, "loss": 0.5}, Arrays: []worker.Array{worker.F64("P", []float64{1, 0, 0, 0}, 2, 2), worker.Bytes("state", []byte("abc"))}})
	f.Add(b.Bytes())
	f.Add([]byte("\x02\x00\x00\x00{}\x00\x00\x00\x00\x00\x00\x00\x00"))
	f.Add([]byte("\x10\x00\x00\x00{\"arrays\":[{}]}\x00\x00\x00\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, in []byte) {
		fr, err := worker.ReadFrame(bytes.NewReader(in))
		if err != nil {
			return
		}
		// What was read writes back and reads again the same.
		var out bytes.Buffer
		if err := worker.WriteFrame(&out, fr); err != nil {
			t.Fatalf("re-encoding a frame read: %v", err)
		}
		again, err := worker.ReadFrame(&out)
		if err != nil || len(again.Arrays) != len(fr.Arrays) {
			t.Fatalf("round trip: %v", err)
		}
		for i := range fr.Arrays {
			if !bytes.Equal(again.Arrays[i].Data, fr.Arrays[i].Data) {
				t.Fatalf("array %d changed in the round trip", i)
			}
		}
	})
}

// A worker whose hello does not say it serves the features request is
// refused the samples form before the run starts; the paper's form runs.
func TestWorkerWithoutFeatures(t *testing.T) {
	c, err := fake(t, "nofeatures", 9, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.HasFeatures() {
		t.Fatal("a worker that did not say so serves features")
	}
	cfg := toyConfig()
	cfg.Form = gain.Samples
	if _, err := train.New(cfg, c); err == nil || !errors.Is(err, train.ErrNoFeatures) {
		t.Fatalf("the samples form over a worker without features: %v", err)
	}
	if _, _, _, err := c.Features(train.SplitVal); err == nil {
		t.Fatal("Features of a worker without the request succeeded")
	}
	cfg.Form = gain.Paper
	if _, err := train.New(cfg, c); err != nil {
		t.Fatal(err)
	}
}

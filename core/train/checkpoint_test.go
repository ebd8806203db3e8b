package train

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

// Resuming from any checkpoint reproduces the uninterrupted run exactly:
// same summary, same final weights.
func TestResumeEqualsUninterrupted(t *testing.T) {
	sp := toySplit(4, 6, 90, 1)
	cfg := toyConfig()
	ctl := []Control{{Op: OpSet, Key: "s", Value: "3", At: 25}, {Op: OpSet, Key: "batch", Value: "8", At: 44}}
	e, err := New(cfg, toyNet(t, sp, cfg.Batch), sp)
	if err != nil {
		t.Fatal(err)
	}
	ckpts := map[int][]byte{}
	var finals int
	e.SetCheckpointer(1, func(step int, b []byte, final bool) error {
		if final {
			finals++
			return nil
		}
		ckpts[step] = b
		return nil
	})
	for _, c := range ctl {
		e.Send(c)
	}
	want, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	wantParams := e.Net().Params()
	if finals != 1 {
		t.Errorf("%d final checkpoints, want 1", finals)
	}
	for _, step := range []int{10, 20, 30, 40, 50} {
		b, ok := ckpts[step]
		if !ok {
			t.Fatalf("no checkpoint at step %d (have %d)", step, len(ckpts))
		}
		r, err := Resume(cfg, sp, b)
		if err != nil {
			t.Fatalf("resume at %d: %v", step, err)
		}
		// Controls not yet applied at the checkpoint are sent again, as
		// the run store does from its log.
		for _, c := range ctl {
			if c.At >= step {
				r.Send(c)
			}
		}
		got, err := r.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got.Seconds, want.Seconds = 0, 0
		if !reflect.DeepEqual(got, want) {
			t.Errorf("resumed at %d: summary differs\n got %+v\nwant %+v", step, got, want)
		}
		if !reflect.DeepEqual(r.Net().Params(), wantParams) {
			t.Errorf("resumed at %d: final weights differ", step)
		}
	}
}

func TestResumeRejectsDamage(t *testing.T) {
	sp := toySplit(3, 5, 60, 2)
	cfg := toyConfig()
	e, err := New(cfg, toyNet(t, sp, cfg.Batch), sp)
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Resume(cfg, sp, b); err != nil {
		t.Fatalf("intact checkpoint: %v", err)
	}
	for _, c := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"truncated", b[:len(b)/2]},
		{"flipped byte", func() []byte { c := append([]byte(nil), b...); c[len(c)/3] ^= 1; return c }()},
		{"wrong magic", append([]byte("NOTSELMX"), b[8:]...)},
	} {
		if _, err := Resume(cfg, sp, c.b); !errors.Is(err, ErrCheckpoint) {
			t.Errorf("%s: err = %v, want ErrCheckpoint", c.name, err)
		}
	}
}

func FuzzResume(f *testing.F) {
	sp := toySplit(3, 5, 60, 2)
	cfg := toyConfig()
	net := toyNetF(sp, cfg.Batch)
	e, _ := New(cfg, net, sp)
	b, _ := e.MarshalState()
	f.Add(b)
	f.Add([]byte("SELMIXCK\x05\x00\x00\x00{}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		Resume(cfg, sp, b) // must not panic
	})
}

// A fork sets hyperparameters at the checkpoint step, before the resumed
// engine has evaluated anything: it must not touch the missing evaluation,
// and must equal a run that made the same change at that step. Acked
// counts the controls the checkpoint already holds.
func TestSetRightAfterResume(t *testing.T) {
	sp := toySplit(4, 6, 90, 1)
	cfg := toyConfig()
	run := func(e *Engine, ctl ...Control) *Summary {
		t.Helper()
		for _, c := range ctl {
			e.Send(c)
		}
		s, err := e.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		s.Seconds = 0
		return s
	}
	set := Control{Op: OpSet, Key: "s", Value: "2", At: 20}
	first, err := New(cfg, toyNet(t, sp, cfg.Batch), sp)
	if err != nil {
		t.Fatal(err)
	}
	var ckpt []byte
	first.SetCheckpointer(2, func(step int, b []byte, final bool) error {
		if step == 20 && !final {
			ckpt = b
		}
		return nil
	})
	run(first, Control{Op: OpSet, Key: "omega", Value: "30", At: 5})
	if ckpt == nil {
		t.Fatal("no checkpoint at step 20")
	}
	forked, err := Resume(cfg, sp, ckpt)
	if err != nil {
		t.Fatal(err)
	}
	if forked.Acked() != 1 {
		t.Errorf("Acked() = %d after resume, want 1 (the omega change)", forked.Acked())
	}
	got := run(forked, set)
	straight, err := New(cfg, toyNet(t, sp, cfg.Batch), sp)
	if err != nil {
		t.Fatal(err)
	}
	want := run(straight, Control{Op: OpSet, Key: "omega", Value: "30", At: 5}, set)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fork with s=2 at step 20 differs from a run that set it there\n got %+v\nwant %+v", got, want)
	}
}

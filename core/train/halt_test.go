package train_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"selmix/core/local"
	"selmix/core/loop"
	"selmix/core/train"
)

// halting is a Local whose nth Train call fails with an error wrapping
// ErrHalt (a worker interrupted or out of memory); it counts the calls it
// gets after that.
type halting struct {
	*local.Local
	n, calls, after int
}

func (h *halting) Train(r *train.TrainRequest) (float64, error) {
	h.calls++
	if h.calls > h.n {
		h.after++
	}
	if h.calls == h.n {
		return 0, fmt.Errorf("worker ran out of memory: %w", train.ErrHalt)
	}
	return h.Local.Train(r)
}

func (h *halting) Evaluate(s train.Split, c bool) (*train.Eval, error) {
	if h.calls >= h.n {
		h.after++
	}
	return h.Local.Evaluate(s, c)
}

func (h *halting) Save() (*train.Saved, error) {
	if h.calls >= h.n {
		h.after++
	}
	return h.Local.Save()
}

// A Trainer that halts stops the run rather than failing it: Run returns a
// *Halted at the step it stood at (also ErrStopped), publishes a final
// snapshot in state Stopped without a summary and no error, and asks the
// Trainer for nothing more. A run resumed from its last checkpoint ends
// exactly as an uninterrupted one.
func TestEngineTrainerHalts(t *testing.T) {
	sp := toySplit(4, 6, 90, 1)
	cfg := toyConfig()
	want := runToy(t, cfg, nil)

	tr := &halting{Local: toyLocal(t, sp, cfg.Batch), n: 4}
	e, err := train.New(cfg, tr)
	if err != nil {
		t.Fatal(err)
	}
	train.SetPace(e, 5) // the 4th request is the one after the checkpoint at step 10
	var last []byte
	e.SetCheckpointer(1, func(step int, b []byte, final bool) error { last = b; return nil })
	st := e.Subscribe()
	done := make(chan []loop.Snapshot)
	go func() {
		var evs []loop.Snapshot
		for s, ok := st.Next(context.Background()); ok; s, ok = st.Next(context.Background()) {
			evs = append(evs, s)
		}
		done <- evs
	}()
	sum, err := e.Run(context.Background())
	evs := <-done
	var h *train.Halted
	if !errors.As(err, &h) || !errors.Is(err, train.ErrStopped) || !errors.Is(err, train.ErrHalt) || sum != nil {
		t.Fatalf("Run: %v (summary %v), want a *Halted wrapping ErrStopped and ErrHalt, no summary", err, sum)
	}
	if tr.after != 0 {
		t.Errorf("the engine made %d requests of the trainer after it halted", tr.after)
	}
	end := evs[len(evs)-1]
	if end.Kind != loop.KindFinal || end.State != loop.Stopped || end.Summary != nil || end.Step != h.Step {
		t.Errorf("last snapshot: %v in state %v at step %d with summary %v; want a final, stopped one at step %d without", end.Kind, end.State, end.Step, end.Summary, h.Step)
	}
	for _, s := range evs {
		if s.Kind == loop.KindError {
			t.Errorf("an error snapshot was published: %s", s.Err)
		}
	}
	if h.Step == 0 || last == nil {
		t.Fatalf("halted at step %d with checkpoint %v: the toy run must get past its first checkpoint", h.Step, last != nil)
	}
	e2, err := resumeToy(cfg, sp, last)
	if err != nil {
		t.Fatal(err)
	}
	got, err := e2.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got.Seconds, want.sum.Seconds = 0, 0
	if !reflect.DeepEqual(got.Best, want.sum.Best) {
		t.Errorf("resumed after the halt: best %+v, want %+v", got.Best, want.sum.Best)
	}
	gs, ws := *got, *want.sum
	gs.Best, ws.Best = nil, nil // a pointer: compared above
	if fmt.Sprint(gs) != fmt.Sprint(ws) {
		t.Errorf("resumed after the halt:\n got %+v\nwant %+v", *got, *want.sum)
	}
}

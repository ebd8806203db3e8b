package loop

import (
	"context"
	"sync"
	"testing"
	"time"
)

func TestStreamCoalescesStepsKeepsEvents(t *testing.T) {
	st := NewStream()
	st.Publish(Snapshot{Kind: KindStep, Step: 1})
	st.Publish(Snapshot{Kind: KindStep, Step: 2})
	st.Publish(Snapshot{Kind: KindRefresh, Step: 2})
	st.Publish(Snapshot{Kind: KindStep, Step: 3})
	st.Publish(Snapshot{Kind: KindStep, Step: 4})
	st.Publish(Snapshot{Kind: KindControl, Step: 4})
	st.Publish(Snapshot{Kind: KindStep, Step: 5})
	st.Publish(Snapshot{Kind: KindFinal, Step: 5})
	st.Close()
	type ks struct {
		k    Kind
		step int
	}
	var got []ks
	for {
		s, ok := st.Next(context.Background())
		if !ok {
			break
		}
		got = append(got, ks{s.Kind, s.Step})
	}
	// Step snapshots older than a later event are superseded; events are
	// all delivered in order.
	want := []ks{{KindRefresh, 2}, {KindControl, 4}, {KindFinal, 5}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("item %d = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestStreamLatestStepDelivered(t *testing.T) {
	st := NewStream()
	for i := 1; i <= 100; i++ {
		st.Publish(Snapshot{Kind: KindStep, Step: i})
	}
	s, ok := st.Next(context.Background())
	if !ok || s.Step != 100 {
		t.Fatalf("got step %d ok=%v, want the newest (100)", s.Step, ok)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, ok := st.Next(ctx); ok {
		t.Error("Next returned a snapshot from an empty stream")
	}
}

// A reader that never reads must not block the publisher, and a slow
// reader still receives every event.
func TestStreamSlowReader(t *testing.T) {
	st := NewStream()
	const events = 1000
	var wg sync.WaitGroup
	wg.Add(1)
	got := 0
	go func() {
		defer wg.Done()
		for {
			s, ok := st.Next(context.Background())
			if !ok {
				return
			}
			if s.Kind == KindRefresh {
				got++
				time.Sleep(10 * time.Microsecond)
			}
		}
	}()
	for i := 0; i < events; i++ {
		st.Publish(Snapshot{Kind: KindStep, Step: 2 * i})
		st.Publish(Snapshot{Kind: KindRefresh, Step: 2*i + 1})
	}
	st.Close()
	wg.Wait()
	if got != events {
		t.Errorf("reader saw %d refresh events, want %d", got, events)
	}
	idle := NewStream()
	for i := 0; i < 100000; i++ {
		idle.Publish(Snapshot{Kind: KindStep, Step: i})
	}
}

package workbench

import (
	"context"
	"testing"
	"time"

	"selmix/core/loop"

	tea "charm.land/bubbletea/v2"
)

func TestFollowDeliversEventsAndClose(t *testing.T) {
	st := loop.NewStream()
	st.Publish(loop.Snapshot{Kind: loop.KindRefresh, Step: 0})
	for i := 1; i <= 100; i++ {
		st.Publish(loop.Snapshot{Kind: loop.KindStep, Step: i})
	}
	st.Publish(loop.Snapshot{Kind: loop.KindControl, Step: 100, Ack: &loop.Ack{Step: 100}})
	st.Publish(loop.Snapshot{Kind: loop.KindStep, Step: 101})
	st.Publish(loop.Snapshot{Kind: loop.KindFinal, Step: 101})
	st.Close()

	var got []tea.Msg
	Follow(context.Background(), st, func(m tea.Msg) { got = append(got, m) }, 0)

	if len(got) == 0 {
		t.Fatal("Follow sent nothing")
	}
	if _, ok := got[len(got)-1].(ClosedMsg); !ok {
		t.Fatalf("last message %T, want ClosedMsg", got[len(got)-1])
	}
	var kinds []loop.Kind
	for _, m := range got[:len(got)-1] {
		b, ok := m.(SnapshotsMsg)
		if !ok {
			t.Fatalf("message %T, want SnapshotsMsg", m)
		}
		for _, s := range b {
			kinds = append(kinds, s.Kind)
		}
	}
	events := 0
	steps := 0
	for _, k := range kinds {
		if k == loop.KindStep {
			steps++
		} else {
			events++
		}
	}
	if events != 3 {
		t.Errorf("delivered %d refresh/control/final snapshots, want all 3 (%v)", events, kinds)
	}
	if steps > 1 {
		t.Errorf("delivered %d step snapshots, want them coalesced (%v)", steps, kinds)
	}
	if kinds[len(kinds)-1] != loop.KindFinal {
		t.Errorf("kinds %v do not end with the final snapshot", kinds)
	}
}

func TestFollowStopsWithContext(t *testing.T) {
	st := loop.NewStream()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan []tea.Msg)
	go func() {
		var got []tea.Msg
		Follow(ctx, st, func(m tea.Msg) { got = append(got, m) }, time.Millisecond)
		done <- got
	}()
	cancel()
	select {
	case got := <-done:
		for _, m := range got {
			if _, ok := m.(ClosedMsg); ok {
				t.Error("Follow reported the run closed when only the viewer left")
			}
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Follow did not return after its context ended")
	}
}

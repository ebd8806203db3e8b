package workbench

import (
	"context"
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"selmix/core/loop"
	"selmix/tui/internal/wait"
)

// SnapshotMsg carries one engine snapshot (an immutable copy).
type SnapshotMsg struct{ Snapshot loop.Snapshot }

// SnapshotsMsg carries every snapshot that arrived since the last one the
// UI took, oldest first: one Update and one redraw for all of them.
type SnapshotsMsg []loop.Snapshot

// ClosedMsg says the snapshot stream ended: the run is over.
type ClosedMsg struct{}

// ErrMsg is a failure outside the engine (the reader, the viewer).
type ErrMsg struct{ Err error }

// MatricesMsg brings G and P of the refresh at Step, for snapshots that
// came without them (a recorded run's are read from disk once its
// history is on screen; see Options.LoadMatrices). Note, if set, goes to
// the event log; Err says why there are none.
type MatricesMsg struct {
	Step int
	G, P []float64
	Note string
	Err  error
}

// Controller is where controls go; *train.Engine is one. Send must not
// block.
type Controller interface {
	Send(loop.Control)
}

// UIRate is how often snapshots reach the UI. The stream coalesces steps
// and queues events meanwhile, so the engine never waits, and the UI
// redraws at a rate a human can read without taking CPU from training.
const UIRate = 150 * time.Millisecond

// Follow reads st until it closes or ctx ends and hands what it reads to
// send (normally tea.Program.Send): it waits for a snapshot, takes every
// other one already pending, sends them as one SnapshotsMsg, and then
// waits `every` before reading on. Refresh, control, final and error
// snapshots are queued by the stream and never lost; step snapshots
// coalesce to the newest. Run it in its own goroutine: it is the only
// reader of st.
func Follow(ctx context.Context, st *loop.Stream, send func(tea.Msg), every time.Duration) {
	defer func() {
		// A bug here must reach the screen, not kill the process with the
		// terminal left in raw mode.
		if r := recover(); r != nil {
			send(ErrMsg{fmt.Errorf("snapshot reader: %v", r)})
		}
	}()
	// Next with an ended context returns at once: a non-blocking read.
	now, cancel := context.WithCancel(context.Background())
	cancel()
	for {
		s, ok := st.Next(ctx)
		if !ok {
			if ctx.Err() == nil {
				send(ClosedMsg{})
			}
			return
		}
		batch := SnapshotsMsg{s}
		for {
			s, ok := st.Next(now)
			if !ok {
				break // nothing pending (or closed: the next blocking read says so)
			}
			batch = append(batch, s)
		}
		send(batch)
		if every > 0 && !wait.Sleep(ctx, every) {
			return
		}
	}
}

package loop

import (
	"context"
	"slices"
	"sync"
)

// Source is where snapshots come from: an engine's Stream, or the live
// client of a run in another process (runs/live). Next blocks until a
// snapshot comes, and reports false once the source has ended or ctx is
// done.
type Source interface {
	Next(ctx context.Context) (Snapshot, bool)
}

// Stream carries snapshots from the engine to one reader. The engine never
// blocks on it: per-step snapshots are coalesced to the newest, and every
// other kind (refresh, control, phase, final, error) is queued and never
// dropped. A closed stream means the run is over.
type Stream struct {
	mu     sync.Mutex
	queue  []Snapshot // events that must be delivered, in order
	latest *Snapshot  // newest step snapshot not yet read
	events int        // events (non-step snapshots) published
	closed bool
	lossy  bool          // KeepLatestRefresh
	wake   chan struct{} // capacity 1: "something changed"
}

// KeepLatestRefresh makes st hold, for a reader that falls behind, only
// the newest refresh's evaluation: a refresh published while older ones
// wait drops them, and the controls waiting with them lose their copy of
// it. A viewer in another process (the control socket) wants the newest
// refresh, not the old ones, and each refresh holds K×K matrices (16 MB
// at K = 1000) for as long as any reader has not read it. Never for the
// run's record, which must see every event.
func (st *Stream) KeepLatestRefresh() {
	st.mu.Lock()
	st.lossy = true
	st.mu.Unlock()
}

// NewStream returns an empty open stream.
func NewStream() *Stream { return &Stream{wake: make(chan struct{}, 1)} }

// Publish hands s to the reader without waiting. s must not be modified
// afterwards: the engine publishes fresh copies.
func (st *Stream) Publish(s Snapshot) {
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return
	}
	if s.Kind == KindStep {
		st.latest = &s
	} else {
		// An event supersedes any older pending step snapshot: the reader
		// sees the event, which is newer.
		if st.latest != nil && st.latest.Step <= s.Step {
			st.latest = nil
		}
		if st.lossy && s.Kind == KindRefresh {
			st.queue = slices.DeleteFunc(st.queue, func(q Snapshot) bool { return q.Kind == KindRefresh })
			for i := range st.queue {
				st.queue[i].Refresh = nil
			}
		}
		st.queue = append(st.queue, s)
		st.events++
	}
	st.mu.Unlock()
	st.signal()
}

// Events is how many events (every kind but steps) have been published;
// none of them is ever dropped.
func (st *Stream) Events() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.events
}

// Backlog is how many events are published and not yet read: how far
// behind its reader is.
func (st *Stream) Backlog() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.queue)
}

// Close marks the end of the run; pending events are still delivered.
func (st *Stream) Close() {
	st.mu.Lock()
	st.closed = true
	st.mu.Unlock()
	st.signal()
}

func (st *Stream) signal() {
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// Next returns the next snapshot, waiting until one is published. It
// returns false once the stream is closed and drained, or when ctx ends.
func (st *Stream) Next(ctx context.Context) (Snapshot, bool) {
	for {
		st.mu.Lock()
		if len(st.queue) > 0 {
			s := st.queue[0]
			st.queue[0] = Snapshot{}
			st.queue = st.queue[1:]
			st.mu.Unlock()
			return s, true
		}
		if st.latest != nil {
			s := *st.latest
			st.latest = nil
			st.mu.Unlock()
			return s, true
		}
		closed := st.closed
		st.mu.Unlock()
		if closed {
			return Snapshot{}, false
		}
		select {
		case <-st.wake:
		case <-ctx.Done():
			return Snapshot{}, false
		}
	}
}

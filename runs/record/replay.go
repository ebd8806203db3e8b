package record

import (
	"sort"

	"selmix/core/loop"
)

// Snapshots replays a run's log as the snapshots the engine sent, for a
// viewer that only knows snapshots: controls and refreshes in step order
// (controls first at a step, as the engine applies them before
// evaluating), then how the run ended: its error, its final summary, or
// the stop of its last session. Refreshes carry G and P only where the
// history holds them in memory (format 1); elsewhere they are nil, "not
// loaded yet", and a viewer fetches the ones it shows with Matrices.
func Snapshots(h *History) []loop.Snapshot {
	total := 0
	if len(h.Starts) > 0 {
		total = h.Starts[0].Total
	}
	type ev struct {
		step, order int
		s           loop.Snapshot
	}
	var evs []ev
	for _, r := range h.Refreshes {
		stats := r.Stats
		s := loop.Snapshot{Kind: loop.KindRefresh, Step: r.Step, Total: r.Total, State: r.State, Hyper: r.Hyper, Refresh: &stats, Loss: nan}
		if r.Loss != nil {
			s.Loss = *r.Loss
		}
		evs = append(evs, ev{r.Step, 1, s})
	}
	for _, a := range h.Controls {
		a := a
		evs = append(evs, ev{a.Step, 0, loop.Snapshot{Kind: loop.KindControl, Step: a.Step, Total: total, Ack: &a, Loss: nan}})
	}
	sort.SliceStable(evs, func(i, j int) bool {
		if evs[i].step != evs[j].step {
			return evs[i].step < evs[j].step
		}
		return evs[i].order < evs[j].order
	})
	out := make([]loop.Snapshot, 0, len(evs)+2)
	var last loop.Snapshot
	for _, e := range evs {
		s := e.s
		if s.Kind == loop.KindControl {
			// Acks carry no run state; show them with the last known one.
			s.Hyper, s.State, s.Refresh, s.Loss = last.Hyper, last.State, last.Refresh, last.Loss
		}
		last = s
		out = append(out, s)
	}
	for _, e := range h.Errors {
		s := last
		s.Kind, s.State, s.Err, s.Ack = loop.KindError, loop.Failed, e.Err, nil
		out = append(out, s)
	}
	end := func(sum *loop.Summary, state loop.State) {
		s := last
		s.Kind, s.Ack, s.Summary, s.Step, s.State = loop.KindFinal, nil, sum, sum.Steps, state
		out = append(out, s)
	}
	switch stop := h.Stopped(); {
	case h.Final != nil:
		state := loop.Finished
		if h.Final.Steps < total {
			state = loop.Stopped // format 1 logged stops as final events
		}
		end(h.Final, state)
	case stop != nil:
		end(stop, loop.Stopped)
	}
	if total > 0 {
		for i := range out {
			out[i].Total = total
		}
	}
	return out
}

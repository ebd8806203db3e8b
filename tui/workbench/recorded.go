package workbench

import (
	"fmt"

	tea "charm.land/bubbletea/v2"

	"selmix/core/loop"
	"selmix/runs"
	"selmix/runs/record"
	"selmix/tui/runstate"
)

// RunInfo is what the workbench shows of run r, whose log h holds,
// besides its snapshots: its names, folder, worker and classes.
func RunInfo(r *runs.Run, h *record.History) runstate.Info {
	info := runstate.Info{ID: r.Meta.ID, Name: r.Meta.Name, Dir: r.Dir, Worker: r.WorkerCommand()}
	if len(h.Starts) > 0 {
		info.ClassNames, info.TrainCounts = h.Starts[0].ClassNames, h.Starts[0].TrainCounts
	}
	return info
}

// Recorded is the read-only workbench of run r, whose log h holds (o
// with their Info and LoadMatrices), and h's history as the snapshots
// to feed it.
func Recorded(r *runs.Run, h *record.History, o Options) (*Model, []loop.Snapshot) {
	o.Info = RunInfo(r, h)
	o.Info.ReadOnly = true
	o.Ctl = nil
	o.LoadMatrices = LoadMatrices(h)
	return New(o), record.Snapshots(h)
}

// FirstScreen is what m shows first at width×height once it has snaps,
// their end and, where it loads them, the last G and P: as text, without
// a terminal (selmix open --print).
func (m *Model) FirstScreen(snaps []loop.Snapshot, width, height int) string {
	m.Update(tea.WindowSizeMsg{Width: width, Height: height})
	m.Update(SnapshotsMsg(snaps))
	m.Update(ClosedMsg{})
	if load := m.Init(); load != nil {
		m.Update(load())
	}
	return m.Render()
}

// LoadMatrices reads G and P of the last refresh of h, for a workbench
// that shows h's snapshots (which come without them) first. When the run
// did not keep that refresh's (record.matrices_every), it shows the
// latest it kept, and says so.
func LoadMatrices(h *record.History) func() MatricesMsg {
	return func() MatricesMsg {
		n := len(h.Refreshes)
		if n == 0 {
			return MatricesMsg{}
		}
		last := h.Refreshes[n-1].Step
		i := h.LastMatrices()
		if i < 0 {
			return MatricesMsg{Note: "G and P: no refresh of this run kept them (record.matrices_every)"}
		}
		G, P, err := h.Matrices(i)
		if err != nil {
			return MatricesMsg{Err: err}
		}
		msg := MatricesMsg{Step: last, G: G, P: P}
		if at := h.Refreshes[i].Step; at != last {
			msg.Note = fmt.Sprintf("G and P shown are from step %d, the last refresh that kept them (record.matrices_every)", at)
		}
		return msg
	}
}

package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"time"

	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/runs"
)

// History is a run's log decoded: what every viewer of a finished or live
// run draws from. It holds every scalar and per-class vector of the run;
// the K×K matrices stay on disk until Matrices reads them, so a history
// costs O(refreshes·K) memory, never O(refreshes·K²).
type History struct {
	Format    int // the run's format (run.json)
	Starts    []Start
	Refreshes []RefreshEvent
	Controls  []loop.Ack
	Final     *loop.Summary
	FinalTime time.Time // when the final event was written; zero if unknown
	// Stops are the sessions that stopped early, in order; their reports
	// carry scalars only.
	Stops    []loop.Summary
	Errors   []ErrorData
	Warnings []runs.Warning

	arrays  string // path of arrays.bin
	stopped bool   // the last session ended with a stop
}

// RefreshEvent is a refresh as a run's log holds it (loop.Refresh is
// what the refresh computed, RefreshData its record on the wire). Stats
// holds everything but G and P (see History.Matrices), unless a caller has
// filled them in.
type RefreshEvent struct {
	Step, Total int
	State       loop.State
	Hyper       loop.Hyper
	Loss        *float64 // last training loss; nil before the first step
	Stats       loop.Refresh
	Time        time.Time // when the event was written; zero if unknown

	matrices *runs.Ref // where G and P are in arrays.bin; nil if not kept
}

// Data is r as a refresh event's payload: the schema runs show --json
// prints for each refresh.
func (r *RefreshEvent) Data() RefreshData {
	loss := nan
	if r.Loss != nil {
		loss = *r.Loss
	}
	return refreshData(r.Step, r.Total, r.State, r.Hyper, loss, &r.Stats)
}

var nan = math.NaN()

// ErrNoMatrices says a refresh's G and P were not kept: record.matrices_every
// keeps them only every n-th refresh (and always at the last one).
var ErrNoMatrices = errors.New("G and P of this refresh were not recorded (record.matrices_every)")

// SessionStart is the step the last session began at: 0 for a run never
// resumed, else the checkpoint step of the last resume.
func (h *History) SessionStart() int {
	if n := len(h.Starts); n > 0 {
		return h.Starts[n-1].Step
	}
	return 0
}

// Best is the best validation ψ of one objective over the refreshes
// during which it was the optimized one without a break (From to To).
// Aimed says that refresh's ψ was aimed at α/K + δ (loop.Aimed), not
// the objective's reported ψ.
type Best struct {
	Objective string
	Psi       float64
	Aimed     bool
	Step      int // the refresh that reached it
	From, To  int // steps of the segment's first and last refresh
}

// refreshAt is the last refresh logged at step, nil if none.
func (h *History) refreshAt(step int) *RefreshEvent {
	for i := len(h.Refreshes) - 1; i >= 0; i-- {
		if h.Refreshes[i].Step == step {
			return &h.Refreshes[i]
		}
	}
	return nil
}

// Bests judges every refresh's ψ with the objective optimized at it: one
// Best per stretch of refreshes under one objective, in order. A run
// whose objective never changed has one.
func (h *History) Bests() []Best {
	var out []Best
	for i := range h.Refreshes {
		rf := &h.Refreshes[i]
		obj, psi := string(rf.Hyper.Objective), rf.Stats.Psi
		if n := len(out); n > 0 && out[n-1].Objective == obj {
			b := &out[n-1]
			b.To = rf.Step
			if psi > b.Psi || math.IsNaN(b.Psi) {
				b.Psi, b.Step, b.Aimed = psi, rf.Step, rf.Hyper.Aimed()
			}
			continue
		}
		out = append(out, Best{Objective: obj, Psi: psi, Aimed: rf.Hyper.Aimed(), Step: rf.Step, From: rf.Step, To: rf.Step})
	}
	return out
}

// HasMatrices reports whether G and P of refresh i can be had.
func (h *History) HasMatrices(i int) bool {
	rf := &h.Refreshes[i]
	return rf.matrices != nil || (rf.Stats.G != nil && rf.Stats.P != nil)
}

// LastMatrices is the index of the latest refresh whose G and P were
// kept, or -1.
func (h *History) LastMatrices() int {
	for i := len(h.Refreshes) - 1; i >= 0; i-- {
		if h.HasMatrices(i) {
			return i
		}
	}
	return -1
}

// Matrices returns G and P (K×K, row-major) of refresh i: those in its
// Stats if a caller filled them in (and format-1 runs, which have them
// inline), else read from arrays.bin. It does not modify h, so calls may
// run concurrently.
func (h *History) Matrices(i int) (G, P []float64, err error) {
	rf := &h.Refreshes[i]
	if rf.Stats.G != nil && rf.Stats.P != nil {
		return rf.Stats.G, rf.Stats.P, nil
	}
	if rf.matrices == nil {
		return nil, nil, fmt.Errorf("refresh at step %d: %w", rf.Step, ErrNoMatrices)
	}
	f, err := runs.OpenArrayFile(h.arrays)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	arrs, err := f.Read(*rf.matrices)
	if err != nil {
		return nil, nil, err
	}
	K := rf.Stats.K
	G, P, err = matrices(arrs, K)
	if err != nil {
		return nil, nil, runs.Damaged(fmt.Errorf("%s: record at offset %d (refresh at step %d): %v", h.arrays, rf.matrices.Offset, rf.Step, err))
	}
	return G, P, nil
}

// matrices picks G and P out of a record and checks they are K×K.
func matrices(arrs []runs.Array, K int) (G, P []float64, err error) {
	if err := matrixShapes(arrs, K); err != nil {
		return nil, nil, err
	}
	for _, a := range arrs {
		switch a.Name {
		case ArrayG:
			G = a.Data
		case ArrayP:
			P = a.Data
		}
	}
	return G, P, nil
}

// matrixShapes checks that a record holds G and P, each K×K (its data
// may be left out).
func matrixShapes(arrs []runs.Array, K int) error {
	var g, p bool
	for _, a := range arrs {
		switch a.Name {
		case ArrayG:
			g = true
		case ArrayP:
			p = true
		default:
			continue
		}
		if len(a.Shape) != 2 || a.Shape[0] != K || a.Shape[1] != K {
			return fmt.Errorf("%s has shape %v, want [%d %d] (the refresh refers to the wrong record?)", a.Name, a.Shape, K, K)
		}
	}
	if !g || !p {
		return errors.New("no G and P in it (the refresh refers to the wrong record?)")
	}
	return nil
}

// Stopped is the summary of the last session if it stopped early and no
// session started after it: the run is resumable and not finished.
func (h *History) Stopped() *loop.Summary {
	if !h.stopped || h.Final != nil || len(h.Stops) == 0 {
		return nil
	}
	return &h.Stops[len(h.Stops)-1]
}

// Load reads and decodes a run's event log and the per-class vectors of
// its refreshes. Errors name the file and the event (or the record of
// arrays.bin) and say what is wrong.
//
// config.toml is checked here too (it must be there and read as a
// configuration, runs.Run.Recorded), so that every command reading a run,
// whether or not it needs the configuration, finds the same damage the
// same way.
func Load(r *runs.Run) (*History, error) {
	if _, err := r.Recorded(); err != nil {
		return nil, err
	}
	evs, warns, err := r.Events()
	if err != nil {
		return nil, err
	}
	h := &History{Format: r.Meta.Format, Warnings: warns, arrays: runs.ArraysPath(r.Dir)}
	if h.Format > runs.Format {
		h.Warnings = append(h.Warnings, runs.Warning{File: filepath.Join(r.Dir, "run.json"), Line: 1,
			Msg: fmt.Sprintf("written by a newer selmix (format %d; this one knows %d): what that format added is not shown", h.Format, runs.Format)})
	}
	var af *runs.ArrayFile
	defer func() {
		if af != nil {
			af.Close()
		}
	}()
	read := func(ref runs.Ref) ([]runs.Array, error) {
		if af == nil {
			var err error
			if af, err = r.OpenArrays(); err != nil {
				return nil, err
			}
		}
		return af.Read(ref)
	}
	for _, ev := range evs {
		if err := h.add(ev, read); err != nil {
			return nil, runs.Damaged(fmt.Errorf("%s: event %d (%s at step %d): %w", filepath.Join(r.Dir, "events.jsonl"), ev.Seq, ev.Kind, ev.Step, err))
		}
	}
	// G and P are decoded when shown, but their damage is found here, once,
	// so that every command says the same of the same run (a checksum pass,
	// reading arrays.bin once).
	var buf []byte
	for _, rf := range h.Refreshes {
		if rf.matrices == nil {
			continue
		}
		if af == nil {
			if af, err = r.OpenArrays(); err != nil {
				return nil, runs.Damaged(err)
			}
		}
		K := rf.Stats.K
		if buf, err = af.Check(*rf.matrices, buf, func(arrs []runs.Array) error { return matrixShapes(arrs, K) }); err != nil {
			return nil, fmt.Errorf("G and P of the refresh at step %d: %w", rf.Step, err)
		}
	}
	return h, nil
}

// add decodes one event; read fetches a record of arrays.bin.
func (h *History) add(ev runs.Event, read func(runs.Ref) ([]runs.Array, error)) error {
	v1 := h.Format < 2
	switch ev.Kind {
	case KindStart:
		var s Start
		if err := json.Unmarshal(ev.Data, &s); err != nil {
			return err
		}
		h.Starts = append(h.Starts, s)
		h.stopped = false
	case KindRefresh:
		var d RefreshData
		var arrs [][]runs.Array
		var err error
		if v1 {
			d, arrs, err = decodeV1Refresh(ev.Data)
		} else {
			err = json.Unmarshal(ev.Data, &d)
		}
		if err != nil {
			return err
		}
		rf, err := refreshOf(d)
		if err != nil {
			return err
		}
		if v1 {
			err = rf.setVectors(arrs[0], false)
			if err == nil && len(arrs) > 1 {
				rf.Stats.G, rf.Stats.P, err = matrices(arrs[1], rf.Stats.K)
			}
		} else {
			err = h.refs(&rf, ev.Arrays, read)
		}
		if err != nil {
			return err
		}
		rf.Time = eventTime(ev)
		h.Refreshes = append(h.Refreshes, rf)
	case KindControl:
		d, err := decodeData(ev.Data, v1, decodeV1Control)
		if err != nil {
			return err
		}
		a, err := d.Ack()
		if err != nil {
			return err
		}
		h.Controls = append(h.Controls, a)
	case KindFinal, KindStop:
		d, err := decodeData(ev.Data, v1, decodeV1Summary)
		if err != nil {
			return err
		}
		s := d.Summary()
		if n := len(h.Refreshes); n > 0 {
			// α is not in the summary: the last refresh's, as the engine
			// reports it (its default for 0).
			rf := &h.Refreshes[n-1]
			s.Alpha = metric.Params{Alpha: rf.Hyper.Alpha}.WithDefaults(max(rf.Stats.K, 2)).Alpha
		}
		if b := s.Best; b != nil {
			// Whether the best's ψ was aimed at α/K + δ is what the
			// refresh that reached it ran under (recorded in the summary
			// only since it was; a run before says nothing of it).
			if rf := h.refreshAt(b.Step); rf != nil {
				b.Aimed = rf.Hyper.Aimed()
			}
		}
		if ev.Kind == KindFinal {
			h.Final, h.FinalTime = &s, eventTime(ev)
		} else {
			h.Stops = append(h.Stops, s)
			h.stopped = true
		}
	case KindError:
		var e ErrorData
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			return err
		}
		h.Errors = append(h.Errors, e)
	default:
		return fmt.Errorf("unknown event kind %q", ev.Kind)
	}
	return nil
}

// eventTime is when ev was written; zero if its time does not parse.
func eventTime(ev runs.Event) time.Time {
	t, err := time.Parse(time.RFC3339Nano, ev.Time)
	if err != nil {
		return time.Time{}
	}
	return t
}

// decodeData reads an event's payload: a format-1 run's by its own
// decoder, a later one's as the JSON docs/run-format.md gives.
func decodeData[T any](b []byte, v1 bool, decodeV1 func([]byte) (T, error)) (T, error) {
	if v1 {
		return decodeV1(b)
	}
	var d T
	err := json.Unmarshal(b, &d)
	return d, err
}

// refreshOf converts a refresh payload; the per-class vectors and the
// matrices come separately.
func refreshOf(d RefreshData) (RefreshEvent, error) {
	hy, err := d.Hyper.hyper()
	if err != nil {
		return RefreshEvent{}, err
	}
	rf := RefreshEvent{
		Step: d.Step, Total: d.Total, State: loop.State(d.State), Hyper: hy,
		Stats: loop.Refresh{
			Step: d.Step, Report: d.Report.report(), Objectives: d.Objectives.values(),
			Psi: float64(d.Psi), K: d.K, S: float64(d.S),
		},
	}
	if d.Loss != nil {
		l := float64(*d.Loss)
		rf.Loss = &l
	}
	if d.Predicted != nil && d.Realised != nil {
		p, r := float64(*d.Predicted), float64(*d.Realised)
		rf.Stats.Predicted, rf.Stats.Realised = &p, &r
	}
	return rf, nil
}

// setVectors fills the per-class vectors from a refresh's first record;
// with require, prior, recall and coverage must all be there.
func (rf *RefreshEvent) setVectors(arrs []runs.Array, require bool) error {
	K := rf.Stats.K
	for _, a := range arrs {
		if len(a.Shape) != 1 {
			return fmt.Errorf("array %s has shape %v, want a vector", a.Name, a.Shape)
		}
		switch a.Name {
		case ArrayPrior, ArrayRecall, ArrayCoverage:
			if len(a.Data) != K {
				return fmt.Errorf("array %s has %d values, want K = %d", a.Name, len(a.Data), K)
			}
		}
		switch a.Name {
		case ArrayPrior:
			rf.Stats.Report.Prior = a.Data
		case ArrayRecall:
			rf.Stats.Report.Recall = a.Data
		case ArrayCoverage:
			rf.Stats.Report.Coverage = a.Data
		case ArrayLambda:
			rf.Stats.Lambda = a.Data
		case ArrayAims:
			rf.Stats.Aims = a.Data
		}
	}
	if require && (rf.Stats.Report.Recall == nil || rf.Stats.Report.Coverage == nil || rf.Stats.Report.Prior == nil) {
		return errors.New("its arrays lack the per-class prior, recall or coverage")
	}
	return nil
}

// refs reads a format-2 refresh's vectors and notes where its matrices are.
func (h *History) refs(rf *RefreshEvent, refs []runs.Ref, read func(runs.Ref) ([]runs.Array, error)) error {
	if len(refs) == 0 || len(refs) > 2 {
		return fmt.Errorf("refers to %d records of arrays.bin, want 1 or 2", len(refs))
	}
	arrs, err := read(refs[0])
	if err != nil {
		return err
	}
	if err := rf.setVectors(arrs, true); err != nil {
		return fmt.Errorf("%s: record at offset %d: %v", h.arrays, refs[0].Offset, err)
	}
	if len(refs) == 2 {
		m := refs[1]
		rf.matrices = &m
	}
	return nil
}

// Replayable lists the controls that changed the run's result after step
// `after`, each pinned to the step it took effect: what replay and resume
// send to a new engine. Pause, resume and single-step change timing, not
// results, and refused controls changed nothing, so they are left out;
// stops are included when withStop (replay ends where the original did).
func (h *History) Replayable(after int, withStop bool) []loop.Control {
	var out []loop.Control
	for _, a := range h.Controls {
		op := a.Control.Op
		if a.Err != "" || a.Control.Auto() || a.Step <= after || !(op == loop.OpSet || (withStop && op == loop.OpStop)) {
			continue
		}
		c := a.Control
		c.At = a.Step
		out = append(out, c)
	}
	return out
}

// Scalars is a history in the on-disk schema (format 2), without arrays:
// every scalar of every refresh, the controls, the stops, the final
// summary and the errors. It reads the same whatever format the run was
// written in; runs show --json prints it.
type Scalars struct {
	Refreshes []RefreshData `json:"refreshes"`
	Controls  []ControlData `json:"controls"`
	Stops     []SummaryData `json:"stops"`
	Final     *SummaryData  `json:"summary"` // null unless the run finished
	Errors    []string      `json:"errors"`
	Warnings  []string      `json:"warnings"`
}

// Scalars converts h (see Scalars).
func (h *History) Scalars() Scalars {
	s := Scalars{Refreshes: []RefreshData{}, Controls: []ControlData{}, Stops: []SummaryData{}, Errors: []string{}, Warnings: []string{}}
	for i := range h.Refreshes {
		s.Refreshes = append(s.Refreshes, h.Refreshes[i].Data())
	}
	for _, a := range h.Controls {
		s.Controls = append(s.Controls, ControlRecord(a))
	}
	for i := range h.Stops {
		s.Stops = append(s.Stops, SummaryRecord(&h.Stops[i], false))
	}
	if h.Final != nil {
		f := SummaryRecord(h.Final, true)
		s.Final = &f
	}
	for _, e := range h.Errors {
		s.Errors = append(s.Errors, e.Err)
	}
	for _, w := range h.Warnings {
		s.Warnings = append(s.Warnings, w.String())
	}
	return s
}

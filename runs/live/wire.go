package live

import (
	"encoding/json"
	"errors"
	"fmt"

	"selmix/core/loop"
	"selmix/internal/safetext"
	"selmix/runs/record"
)

// Version is the live protocol this package speaks (docs/run-format.md,
// "The control socket"). Version 2 sends the run's own snake_case records
// (those of its log) with non-finite floats as "NaN", "+Inf" and "-Inf";
// version 1, spoken by selmix before it and saying no version, sent Go
// field names with non-finite floats as null. A server refuses a client
// of another version, a client a server of another version, each with
// one line.
const Version = 2

// Hello is the first line each side sends: the client's says what it
// wants; the server's, before any snapshot, says only its version.
type Hello struct {
	Version int `json:"version"`
	// Matrices: send G and P with every refresh. Default false.
	Matrices bool `json:"matrices,omitempty"`
	// Stats: send each refresh's validation statistics once (BasisData),
	// for forecasts of the interval under other settings. Default false.
	Stats bool `json:"stats,omitempty"`
}

// Message is one line from the server: its hello, a snapshot, or an
// error that ends the connection.
type Message struct {
	Hello    *Hello    `json:"hello,omitempty"`
	Snapshot *Snapshot `json:"snapshot,omitempty"`
	Error    string    `json:"error,omitempty"`
}

// Snapshot is a loop.Snapshot on the socket. Its parts are the records
// of the run's log: the refresh (with its vectors and, when asked for,
// G and P inline), the control acknowledged, the summary.
type Snapshot struct {
	Kind        string              `json:"kind"` // step, refresh, control, final, error or log
	Step        int                 `json:"step"`
	Total       int                 `json:"total"`
	State       string              `json:"state"`
	Hyper       record.HyperData    `json:"hyper"`
	LR          record.Num          `json:"lr"`
	Loss        record.Num          `json:"loss"` // NaN before the first step
	StepsPerSec record.Num          `json:"steps_per_sec"`
	Refresh     *record.RefreshData `json:"refresh,omitempty"`
	Basis       *BasisData          `json:"basis,omitempty"` // the refresh's statistics, to a client that asked
	System      *loop.System        `json:"system,omitempty"`
	Ack         *record.ControlData `json:"ack,omitempty"`
	Summary     *record.SummaryData `json:"summary,omitempty"`
	Error       string              `json:"error,omitempty"`
	Text        string              `json:"text,omitempty"`
}

// Wire converts a snapshot for sending, with G and P if matrices.
func Wire(s loop.Snapshot, matrices bool) *Snapshot {
	w := &Snapshot{
		Kind: s.Kind.String(), Step: s.Step, Total: s.Total, State: string(s.State), Hyper: record.HyperData{Hyper: s.Hyper},
		LR: record.Num(s.LR), Loss: record.Num(s.Loss), StepsPerSec: record.Num(s.StepsPerSec),
		System: s.System, Error: s.Err, Text: s.Text,
	}
	if s.Refresh != nil {
		w.Refresh = record.InlineRefresh(s, matrices)
	}
	if s.Ack != nil {
		a := record.ControlRecord(*s.Ack)
		w.Ack = &a
	}
	if s.Summary != nil {
		sum := record.SummaryRecord(s.Summary, true)
		w.Summary = &sum
	}
	return w
}

// parseKind reads a snapshot kind's name.
func parseKind(s string) (loop.Kind, error) {
	for k := loop.KindStep; k <= loop.KindLog; k++ {
		if k.String() == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("unknown snapshot kind %q", s)
}

// Unwire converts a received snapshot back; G and P are nil unless they
// were sent. Its strings are made printable.
func (w *Snapshot) Unwire() (loop.Snapshot, error) {
	kind, err := parseKind(w.Kind)
	if err != nil {
		return loop.Snapshot{}, err
	}
	s := loop.Snapshot{
		Kind: kind, Step: w.Step, Total: w.Total, State: loop.State(safetext.Line(w.State)), Hyper: w.Hyper.Hyper,
		LR: float64(w.LR), Loss: float64(w.Loss), StepsPerSec: float64(w.StepsPerSec),
		System: printable(w.System), Err: safetext.Line(w.Error), Text: w.Text,
	}
	if w.Refresh != nil {
		if s.Refresh, err = w.Refresh.Inline(); err != nil {
			return s, err
		}
		if w.Basis != nil {
			if s.Refresh.Basis, err = w.Basis.Basis(); err != nil {
				return s, err
			}
		}
	}
	if w.Ack != nil {
		a, err := w.Ack.Ack()
		if err != nil {
			return s, fmt.Errorf("ack: %w", err)
		}
		a.Err = safetext.Line(a.Err)
		s.Ack = &a
	}
	if w.Summary != nil {
		sum := w.Summary.Summary()
		s.Summary = &sum
	}
	return s, nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(Message{Error: "encoding: " + err.Error()})
	}
	return b
}

// versionError says the peer speaks live protocol v (0: it said none,
// protocol 1); server says whether this side is the run's process.
func versionError(v int, server bool) error {
	if v == 0 {
		v = 1
	}
	if server {
		return fmt.Errorf("this run speaks live protocol %d, the client %d: attach with the selmix that started the run", Version, v)
	}
	return fmt.Errorf("the run's process speaks live protocol %d, this selmix %d: attach with the selmix that started the run, or read its run directory", v, Version)
}

// decodeHello recognises a client's hello line ({"hello":{…}}); ok is
// false for any other line. A hello of another version is an error.
func decodeHello(b []byte) (h Hello, ok bool, err error) {
	var m struct {
		Hello *json.RawMessage `json:"hello"`
	}
	if json.Unmarshal(b, &m) != nil || m.Hello == nil {
		return h, false, nil
	}
	if err := json.Unmarshal(*m.Hello, &h); err != nil {
		return h, true, fmt.Errorf("bad hello: %v", err)
	}
	if h.Version != Version {
		return h, true, versionError(h.Version, true)
	}
	return h, true, nil
}

// decodeControl parses one control line from a client: a control record
// as the log keeps them ({"op":"set","key":"s","value":"20"}). Clients
// change the run now, never at a chosen step, and their controls are
// the researcher's: At is cleared, the source is user, and step and
// error ignored. A line without "op" is refused.
func decodeControl(b []byte) (loop.Control, error) {
	var d record.ControlData
	if err := json.Unmarshal(b, &d); err != nil {
		return loop.Control{}, fmt.Errorf("bad control: %v", err)
	}
	if d.Op == "" {
		return loop.Control{}, errors.New(`bad control: no "op"`)
	}
	a, err := d.Ack()
	if err != nil {
		return loop.Control{}, fmt.Errorf("bad control: %v", err)
	}
	ctl := a.Control
	ctl.At, ctl.Source = 0, loop.SourceUser
	return ctl, nil
}

// encodeControl is the line a client sends for c.
func encodeControl(c loop.Control) []byte {
	return append(mustJSON(record.ControlData{Op: c.Op.String(), Key: c.Key, Value: c.Value}), '\n')
}

// decodeMessage parses one line from the server: a snapshot, nothing (an
// empty message or the server's hello, which the first line must be), or
// the error the server reported. first says whether b is the first line.
func decodeMessage(b []byte, first bool) (*loop.Snapshot, error) {
	// The snapshot is decoded once the version is known: one of another
	// version would fail with a confusing reason.
	var m struct {
		Hello    *Hello          `json:"hello"`
		Snapshot json.RawMessage `json:"snapshot"`
		Error    string          `json:"error"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("bad message from the run: %w", err)
	}
	if m.Error != "" {
		return nil, errors.New(safetext.Line(m.Error))
	}
	switch {
	case m.Hello != nil && m.Hello.Version != Version:
		return nil, versionError(m.Hello.Version, false)
	case first && m.Hello == nil:
		return nil, versionError(0, false) // selmix before version 2 sent no hello
	case m.Snapshot == nil || string(m.Snapshot) == "null":
		return nil, nil
	}
	var w Snapshot
	if err := json.Unmarshal(m.Snapshot, &w); err != nil {
		return nil, fmt.Errorf("bad message from the run: %w", err)
	}
	s, err := w.Unwire()
	if err != nil {
		return nil, fmt.Errorf("bad message from the run: %w", err)
	}
	return &s, nil
}

// printable is sys with its strings made printable (and at most 64
// GPUs): they reach terminals.
func printable(sys *loop.System) *loop.System {
	if sys == nil {
		return nil
	}
	c := sys.Clone()
	c.Device = safetext.Line(c.Device)
	if len(c.GPUs) > 64 {
		c.GPUs = c.GPUs[:64]
	}
	for i := range c.GPUs {
		c.GPUs[i].ID = safetext.Cut(c.GPUs[i].ID, 80)
		c.GPUs[i].Name = safetext.Cut(c.GPUs[i].Name, 80)
	}
	return c
}

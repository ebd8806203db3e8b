package runs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"selmix/internal/boundedfile"
)

// Event is one line of events.jsonl. Arrays lists the records of
// arrays.bin the event refers to, in the order its kind defines.
type Event struct {
	Seq    int             `json:"seq"`
	Time   string          `json:"time"`
	Kind   string          `json:"kind"`
	Step   int             `json:"step"`
	Arrays []Ref           `json:"arrays,omitempty"`
	Data   json.RawMessage `json:"data,omitempty"`
}

// ErrDamaged is wrapped by every error that says a run's file is not what
// selmix wrote (an invalid line, a corrupt or missing record, an event
// inconsistent with the run): the command reading it exits 2, whichever
// it is.
var ErrDamaged = errors.New("damaged run file")

// Damaged marks err as damage to a run's files (errors.Is(err,
// ErrDamaged)); its message is err's.
func Damaged(err error) error {
	if err == nil || errors.Is(err, ErrDamaged) {
		return err
	}
	return damaged{err}
}

type damaged struct{ err error }

func (d damaged) Error() string   { return d.err.Error() }
func (d damaged) Unwrap() []error { return []error{d.err, ErrDamaged} }

// Warning is a problem a reader tolerated, such as a torn last line.
type Warning struct {
	File string
	Line int
	Msg  string
}

func (w Warning) String() string { return fmt.Sprintf("%s:%d: %s", w.File, w.Line, w.Msg) }

// LineError is a corrupt line that cannot be tolerated; Offset is the
// byte it starts at.
type LineError struct {
	File   string
	Line   int
	Offset int64
	Err    error
}

func (e *LineError) Error() string {
	return fmt.Sprintf("%s:%d (byte %d): %v", e.File, e.Line, e.Offset, e.Err)
}
func (e *LineError) Unwrap() []error { return []error{e.Err, ErrDamaged} }

// ReadEvents reads an event log. Sequence numbers must run 1, 2, 3, ...
// An invalid last line (a torn write, even if it ends in a newline) is
// reported as a Warning and ignored; any other invalid line is a *LineError
// naming the file and line. The log is read line by line, never whole: a
// line longer than maxEventLine is damage (no writer writes one, and a
// torn write is a prefix of a line it wrote), so what is held in memory
// is the events, not the file.
func ReadEvents(path string) ([]Event, []Warning, error) {
	f, _, err := boundedfile.Open(path, eventsFile)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	evs, warns, _, err := parseEvents(f, path)
	return evs, warns, err
}

// maxEventLine bounds one line of events.jsonl. The longest a writer
// writes is a refresh or summary at the largest K (21 KB a refresh at
// K = 1000). A variable for tests.
var maxEventLine = 64 << 20

// parseEvents parses a whole log read from r. good is the length of the
// prefix made of complete valid lines: what a writer keeps when it repairs
// a torn tail.
func parseEvents(r io.Reader, file string) (evs []Event, warns []Warning, good int64, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	line := 0
	var off int64
	for {
		b, rerr := readLine(br, maxEventLine)
		if len(b) == 0 && rerr == io.EOF {
			return evs, nil, good, nil
		}
		line++
		if rerr != nil && rerr != io.EOF {
			if errors.Is(rerr, errLineTooLong) {
				return nil, nil, 0, &LineError{File: file, Line: line, Offset: off, Err: rerr}
			}
			return nil, nil, 0, fmt.Errorf("%s: %w", file, rerr)
		}
		terminated := rerr == nil
		body := b
		if terminated {
			body = b[:len(b)-1]
		}
		ev, perr := parseEvent(body, len(evs)+1)
		if perr == nil && !terminated {
			perr = errors.New("no newline at end (torn write)")
		}
		if perr != nil {
			last := !terminated
			if !last {
				_, peek := br.Peek(1)
				last = peek == io.EOF
			}
			if last {
				warns = append(warns, Warning{File: file, Line: line, Msg: "ignored torn last line: " + perr.Error()})
				return evs, warns, good, nil
			}
			return nil, nil, 0, &LineError{File: file, Line: line, Offset: off, Err: perr}
		}
		evs = append(evs, ev)
		off += int64(len(b))
		good = off
	}
}

// errLineTooLong is a line of the log past maxEventLine.
var errLineTooLong = errors.New("line too long")

// readLine returns the next line of br with its newline (without one at
// the end of the input, with io.EOF), or errLineTooLong once it passes max
// bytes. A line that fits br's buffer is returned in it: valid until the
// next read (parseEvent keeps no part of it).
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > max {
			return nil, fmt.Errorf("%w: more than %d bytes", errLineTooLong, max)
		}
		if err != bufio.ErrBufferFull && line == nil {
			return chunk, err
		}
		line = append(line, chunk...)
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

// parseEvent decodes one line and checks it carries sequence number seq.
func parseEvent(line []byte, seq int) (Event, error) {
	if len(bytes.TrimSpace(line)) == 0 {
		return Event{}, errors.New("empty line")
	}
	var raw struct {
		Seq    *int            `json:"seq"`
		Time   *string         `json:"time"`
		Kind   *string         `json:"kind"`
		Step   *int            `json:"step"`
		Arrays []Ref           `json:"arrays"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(line, &raw); err != nil {
		return Event{}, fmt.Errorf("invalid JSON: %w", err)
	}
	switch {
	case raw.Seq == nil:
		return Event{}, errors.New(`missing "seq"`)
	case raw.Time == nil:
		return Event{}, errors.New(`missing "time"`)
	case raw.Kind == nil:
		return Event{}, errors.New(`missing "kind"`)
	case raw.Step == nil:
		return Event{}, errors.New(`missing "step"`)
	case *raw.Kind == "":
		return Event{}, errors.New(`empty "kind"`)
	case *raw.Seq != seq:
		return Event{}, fmt.Errorf("seq %d, want %d", *raw.Seq, seq)
	}
	if _, err := time.Parse(time.RFC3339Nano, *raw.Time); err != nil {
		return Event{}, fmt.Errorf("time %q is not RFC3339", *raw.Time)
	}
	for i, r := range raw.Arrays {
		if r.Offset < 0 || r.Length < minRecord || r.Offset > math.MaxInt64-r.Length {
			return Event{}, fmt.Errorf("arrays[%d]: offset %d, length %d is not a record", i, r.Offset, r.Length)
		}
	}
	ev := Event{Seq: *raw.Seq, Time: *raw.Time, Kind: *raw.Kind, Step: *raw.Step, Arrays: raw.Arrays}
	if len(raw.Data) > 0 && !bytes.Equal(raw.Data, []byte("null")) {
		var c bytes.Buffer
		if err := json.Compact(&c, raw.Data); err != nil {
			return Event{}, fmt.Errorf("data: %w", err)
		}
		ev.Data = c.Bytes()
	}
	return ev, nil
}

// encodeEvent renders ev as one log line, newline included.
func encodeEvent(ev Event) ([]byte, error) {
	b, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

package runs

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

const (
	ev1 = `{"seq":1,"time":"2026-11-22T07:53:00Z","kind":"start","step":0}`
	ev2 = `{"seq":2,"time":"2026-11-22T07:53:01.5+01:00","kind":"refresh","step":10,"data":{"loss":0.5}}`
	ev3 = `{"seq":3,"time":"2026-11-22T07:53:02Z","kind":"final","step":20,"data":[1,2]}`
)

func TestReadEvents(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		wantSeqs  []int
		wantWarn  int // line of the single expected warning, 0 for none
		wantErrAt int // line of the expected *LineError, 0 for none
	}{
		{name: "empty file", in: "", wantSeqs: []int{}},
		{name: "three events", in: ev1 + "\n" + ev2 + "\n" + ev3 + "\n", wantSeqs: []int{1, 2, 3}},
		{name: "torn half line", in: ev1 + "\n" + ev2 + "\n" + ev3[:20], wantSeqs: []int{1, 2}, wantWarn: 3},
		{name: "complete line missing newline", in: ev1 + "\n" + ev2, wantSeqs: []int{1}, wantWarn: 2},
		{name: "torn first line", in: ev1[:5], wantSeqs: []int{}, wantWarn: 1},
		{name: "nul tail", in: ev1 + "\n\x00\x00\x00\x00", wantSeqs: []int{1}, wantWarn: 2},
		{name: "garbage last line with newline", in: ev1 + "\nxx\n", wantSeqs: []int{1}, wantWarn: 2},
		{name: "extra blank line at end", in: ev1 + "\n\n", wantSeqs: []int{1}, wantWarn: 2},
		{name: "corrupt middle line", in: ev1 + "\n{oops\n" + ev3 + "\n", wantErrAt: 2},
		{name: "blank middle line", in: ev1 + "\n\n" + ev2 + "\n", wantErrAt: 2},
		{name: "seq gap", in: ev1 + "\n" + ev3 + "\n" + ev3 + "\n", wantErrAt: 2},
		{name: "seq not starting at 1", in: ev2 + "\n" + ev3 + "\n", wantErrAt: 1},
		{name: "missing kind", in: `{"seq":1,"time":"2026-11-22T07:53:00Z","step":0}` + "\n" + ev2 + "\n", wantErrAt: 1},
		{name: "bad time", in: `{"seq":1,"time":"yesterday","kind":"x","step":0}` + "\n" + ev2 + "\n", wantErrAt: 1},
		{name: "trailing data after object", in: ev1 + " 7\n" + ev2 + "\n", wantErrAt: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), eventsName)
			if err := os.WriteFile(path, []byte(tt.in), 0o644); err != nil {
				t.Fatal(err)
			}
			evs, warns, err := ReadEvents(path)
			if tt.wantErrAt != 0 {
				var le *LineError
				if !errors.As(err, &le) {
					t.Fatalf("err = %v, want a *LineError", err)
				}
				if le.Line != tt.wantErrAt || le.File != path {
					t.Errorf("error at %s:%d, want %s:%d", le.File, le.Line, path, tt.wantErrAt)
				}
				if want := path + ":"; !strings.HasPrefix(err.Error(), want) {
					t.Errorf("error %q does not start with %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v, want nil", err)
			}
			if got := seqs(evs); !reflect.DeepEqual(got, tt.wantSeqs) {
				t.Errorf("seqs = %v, want %v", got, tt.wantSeqs)
			}
			switch {
			case tt.wantWarn == 0 && len(warns) != 0:
				t.Errorf("warnings = %v, want none", warns)
			case tt.wantWarn != 0 && (len(warns) != 1 || warns[0].Line != tt.wantWarn || warns[0].File != path):
				t.Errorf("warnings = %v, want one at %s:%d", warns, path, tt.wantWarn)
			}
		})
	}
}

func TestReadEventsValues(t *testing.T) {
	path := filepath.Join(t.TempDir(), eventsName)
	in := ev1 + "\n" + `{"seq":2, "time":"2026-11-22T07:53:01Z", "kind":"refresh", "step":10, "data":{ "loss" : 0.5 }}` + "\n"
	if err := os.WriteFile(path, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	evs, _, err := ReadEvents(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{
		{Seq: 1, Time: "2026-11-22T07:53:00Z", Kind: "start", Step: 0},
		{Seq: 2, Time: "2026-11-22T07:53:01Z", Kind: "refresh", Step: 10, Data: json.RawMessage(`{"loss":0.5}`)},
	}
	if !reflect.DeepEqual(evs, want) {
		t.Errorf("events = %+v, want %+v", evs, want)
	}
}

func TestReadEventsMissingFile(t *testing.T) {
	_, _, err := ReadEvents(filepath.Join(t.TempDir(), "nope.jsonl"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v, want os.ErrNotExist", err)
	}
}

// FuzzReadEvents checks the log parser never panics and that what it
// accepts is self-consistent: seqs 1..n, at most one warning and only for
// the line after the last event, and the kept prefix re-parses to the same
// events with no warning.
func FuzzReadEvents(f *testing.F) {
	f.Add([]byte(""))
	f.Add([]byte(ev1 + "\n" + ev2 + "\n" + ev3 + "\n"))
	f.Add([]byte(ev1 + "\n" + ev2 + "\n" + ev3[:30]))
	f.Add([]byte(ev1 + "\n{oops\n" + ev3 + "\n"))
	f.Add([]byte(ev1 + "\n\x00\x00\n"))
	f.Add([]byte(`{"seq":1,"time":"2026-11-22T07:53:00Z","kind":"k","step":-3,"data":null}` + "\n"))
	defer func(m int) { maxEventLine = m }(maxEventLine)
	maxEventLine = 512 // so that the fuzzer reaches lines past the bound
	f.Fuzz(func(t *testing.T, b []byte) {
		const file = "fuzz/events.jsonl"
		evs, warns, good64, err := parseEvents(bytes.NewReader(b), file)
		good := int(good64)
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) || le.File != file || le.Line < 1 {
				t.Fatalf("error %v is not a *LineError naming the file and a line", err)
			}
			return
		}
		for i, e := range evs {
			if e.Seq != i+1 {
				t.Fatalf("event %d has seq %d", i, e.Seq)
			}
		}
		if len(warns) > 1 {
			t.Fatalf("%d warnings, want at most 1", len(warns))
		}
		if len(warns) == 1 && warns[0].Line != len(evs)+1 {
			t.Fatalf("warning at line %d, want %d", warns[0].Line, len(evs)+1)
		}
		if good < 0 || good > len(b) || (good > 0 && b[good-1] != '\n') {
			t.Fatalf("good prefix %d of %d bytes does not end a line", good, len(b))
		}
		if len(warns) == 0 && good != len(b) {
			t.Fatalf("no warning but only %d of %d bytes kept", good, len(b))
		}
		again, warns2, good2, err := parseEvents(bytes.NewReader(b[:good]), file)
		if err != nil || len(warns2) != 0 || good2 != good64 || !reflect.DeepEqual(again, evs) {
			t.Fatalf("kept prefix re-parses to %v, %v, %v", again, warns2, err)
		}
		// Re-encoding what was read gives a log that reads the same.
		var buf bytes.Buffer
		for _, e := range evs {
			line, err := encodeEvent(e)
			if err != nil {
				t.Fatalf("encode %+v: %v", e, err)
			}
			buf.Write(line)
		}
		again, warns2, _, err = parseEvents(&buf, file)
		if err != nil || len(warns2) != 0 || len(again) != len(evs) {
			t.Fatalf("re-encoded log reads as %d events, %v, %v; want %d", len(again), warns2, err, len(evs))
		}
		for i := range evs {
			if again[i].Seq != evs[i].Seq || again[i].Kind != evs[i].Kind || again[i].Step != evs[i].Step || again[i].Time != evs[i].Time {
				t.Fatalf("event %d re-reads as %+v, want %+v", i, again[i], evs[i])
			}
		}
	})
}

// A 5 GB event log of zeros (a sparse file) is refused as damage after
// reading one line's bound, not read whole: under the 4 GB address space
// the README's Slurm example gives a member, reading it whole died with
// "fatal error: out of memory".
func TestReadEventsHugeLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(ev1 + "\n")
	if err := f.Truncate(5 << 30); err != nil {
		t.Skip("no sparse 5 GB file here:", err)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err = ReadEvents(path)
	runtime.ReadMemStats(&after)
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2 || !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "more than 67108864 bytes") {
		t.Fatalf("error %v, want line 2 of %s damaged: longer than 64 MiB", err, path)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 512<<20 {
		t.Errorf("reading it allocated %d MiB, want at most 512", got>>20)
	}
}

// A line longer than the reader's buffer (a refresh at K = 1000 is tens
// of KB) is read whole, and the lines after it too.
func TestReadEventsLongLines(t *testing.T) {
	long := `{"seq":2,"time":"2026-11-22T07:53:01Z","kind":"refresh","step":10,"data":{"x":"` + strings.Repeat("y", 300<<10) + `"}}`
	evs, warns, good, err := parseEvents(strings.NewReader(ev1+"\n"+long+"\n"+ev3+"\n"), "events.jsonl")
	if err != nil || len(warns) != 0 || len(evs) != 3 || len(evs[1].Data) != 300<<10+8 || good != int64(len(ev1)+len(long)+len(ev3)+3) {
		t.Fatalf("%d events, %v, %v, good %d", len(evs), warns, err, good)
	}
}

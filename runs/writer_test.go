package runs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"selmix/internal/atomicfile"
)

func TestRoundTrip(t *testing.T) {
	root := filepath.Join(t.TempDir(), "runs")
	config := "[train]\nlr = 0.01\nsteps = 100\n"
	w, err := Create(root, "baseline", config, Meta{
		Objective: "min-recall", Policy: "selmix", Steps: 100,
		Best: math.NaN(), Extra: map[string]string{"dataset": "cifar10-lt"},
	})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if got, want := w.Dir(), filepath.Join(root, w.ID()); got != want {
		t.Errorf("Dir() = %q, want %q", got, want)
	}
	var want []Event
	for i, data := range []any{nil, map[string]float64{"loss": 0.25}, []int{1, 2, 3}, "note <x>"} {
		ev, err := w.Append(fmt.Sprintf("kind%d", i), i*10, data, i%2 == 0)
		if err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
		if ev.Seq != i+1 {
			t.Errorf("Append %d: seq %d, want %d", i, ev.Seq, i+1)
		}
		want = append(want, ev)
	}
	if err := w.SetMeta(func(m *Meta) { m.Best, m.BestStep, m.Status = 0.75, 30, StatusFinished }); err != nil {
		t.Fatalf("SetMeta: %v", err)
	}
	if err := w.WriteSummary([]byte(`{"best":0.75}`)); err != nil {
		t.Fatalf("WriteSummary: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	r, err := Open(root, w.ID())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	m := r.Meta
	if m.ID != w.ID() || m.Name != "baseline" || m.Status != StatusFinished || m.Objective != "min-recall" ||
		m.Policy != "selmix" || m.Steps != 100 || m.Best != 0.75 || m.BestStep != 30 ||
		!reflect.DeepEqual(m.Extra, map[string]string{"dataset": "cifar10-lt"}) {
		t.Errorf("Meta = %+v, want the values written", m)
	}
	if r.Live || r.EffectiveStatus() != StatusFinished {
		t.Errorf("Live = %v, EffectiveStatus = %q; want false, finished", r.Live, r.EffectiveStatus())
	}
	if got, err := r.Config(); err != nil || got != config {
		t.Errorf("Config() = %q, %v; want %q", got, err, config)
	}
	if got, err := r.Summary(); err != nil || string(got) != `{"best":0.75}` {
		t.Errorf("Summary() = %s, %v", got, err)
	}
	evs, warns, err := r.Events()
	if err != nil || len(warns) != 0 {
		t.Fatalf("Events: %v, warnings %v", err, warns)
	}
	if !reflect.DeepEqual(evs, want) {
		t.Errorf("Events =\n%+v\nwant\n%+v", evs, want)
	}
	if got := string(evs[1].Data); got != `{"loss":0.25}` {
		t.Errorf("event 2 data = %s, want {\"loss\":0.25}", got)
	}
	if evs[0].Data != nil {
		t.Errorf("event 1 data = %s, want none", evs[0].Data)
	}
}

func TestCreateRejects(t *testing.T) {
	root := t.TempDir()
	tests := []struct {
		name    string
		config  string
		meta    Meta
		wantErr string
	}{
		{name: "bad toml", config: "lr = = 1", wantErr: "config.toml: not a valid configuration: "},
		{name: "bad status", config: "", meta: Meta{Status: "sleeping"}, wantErr: `unknown status "sleeping"`},
		{name: "bad parent", config: "", meta: Meta{Parent: "../up"}, wantErr: "parent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Create(root, tt.name, tt.config, tt.meta)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	if runs, err := List(root); err != nil || len(runs) != 0 {
		t.Errorf("List after failed creates = %v, %v; want no runs", runs, err)
	}
}

func TestSetMeta(t *testing.T) {
	w := mustCreate(t, t.TempDir(), "x", Meta{})
	defer w.Close()
	tests := []struct {
		name    string
		fn      func(*Meta)
		wantErr string
	}{
		{name: "change id", fn: func(m *Meta) { m.ID = "other" }, wantErr: "cannot change the id"},
		{name: "bad status", fn: func(m *Meta) { m.Status = "done" }, wantErr: `unknown status "done"`},
		{name: "ok", fn: func(m *Meta) { m.Status = StatusPaused; m.Steps = 9 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := w.SetMeta(tt.fn)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("SetMeta: %v", err)
			}
		})
	}
	m, err := readMeta(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != StatusPaused || m.Steps != 9 || m.ID != w.ID() {
		t.Errorf("run.json = %+v, want status paused, steps 9, id %s", m, w.ID())
	}
}

func TestTornTailRepair(t *testing.T) {
	tests := []struct {
		name string
		tail string
	}{
		{name: "half a line", tail: `{"seq":4,"time":"2026-11-2`},
		{name: "whole line without newline", tail: `{"seq":4,"time":"2026-11-22T07:53:00Z","kind":"lost","step":3}`},
		{name: "nul bytes", tail: "\x00\x00\x00\x00\x00\x00"},
		{name: "garbage line with newline", tail: "}{\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			w := mustCreate(t, root, "torn", Meta{})
			mustAppend(t, w, 3)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(w.Dir(), eventsName)
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(tt.tail)
			f.Close()

			r, err := Open(root, w.ID())
			if err != nil {
				t.Fatal(err)
			}
			evs, warns, err := r.Events()
			if err != nil {
				t.Fatalf("Events: %v", err)
			}
			if got := seqs(evs); !reflect.DeepEqual(got, []int{1, 2, 3}) {
				t.Errorf("seqs = %v, want [1 2 3]", got)
			}
			if len(warns) != 1 || warns[0].Line != 4 || warns[0].File != path {
				t.Errorf("warnings = %v, want one at %s:4", warns, path)
			}

			w2, err := OpenWriter(root, w.ID())
			if err != nil {
				t.Fatalf("OpenWriter: %v", err)
			}
			ev, err := w2.Append("resumed", 3, map[string]bool{"ok": true}, true)
			if err != nil || ev.Seq != 4 {
				t.Fatalf("Append after reopen = seq %d, %v; want seq 4", ev.Seq, err)
			}
			w2.Close()
			evs, warns = readLog(t, w.Dir())
			if got := seqs(evs); !reflect.DeepEqual(got, []int{1, 2, 3, 4}) || len(warns) != 0 {
				t.Errorf("after repair: seqs %v, warnings %v; want [1 2 3 4], none", got, warns)
			}
			if evs[3].Kind != "resumed" {
				t.Errorf("event 4 kind = %q, want resumed", evs[3].Kind)
			}
		})
	}
}

func TestCorruptMiddleLine(t *testing.T) {
	root := t.TempDir()
	w := mustCreate(t, root, "corrupt", Meta{})
	mustAppend(t, w, 3)
	w.Close()
	path := filepath.Join(w.Dir(), eventsName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	lines[1] = []byte("{\"seq\":2,\"ti\n")
	corrupt := bytes.Join(lines, nil)
	if err := os.WriteFile(path, corrupt, 0o644); err != nil {
		t.Fatal(err)
	}

	r, err := Open(root, w.ID())
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = r.Events()
	var le *LineError
	if !errors.As(err, &le) || le.File != path || le.Line != 2 {
		t.Fatalf("Events error = %v, want a *LineError at %s:2", err, path)
	}
	if want := fmt.Sprintf("%s:2 (byte %d): ", path, len(lines[0])); !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q, want prefix %q", err, want)
	}
	if !errors.Is(err, ErrDamaged) {
		t.Errorf("error %v does not wrap ErrDamaged", err)
	}
	if _, err := OpenWriter(root, w.ID()); !errors.As(err, &le) {
		t.Errorf("OpenWriter error = %v, want the *LineError", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, corrupt) {
		t.Errorf("OpenWriter changed a corrupt log")
	}
	if live, _ := IsLive(w.Dir()); live {
		t.Errorf("a failed OpenWriter left the run locked")
	}
}

func TestTwoWriters(t *testing.T) {
	root := t.TempDir()
	w := mustCreate(t, root, "busy", Meta{})
	_, err := OpenWriter(root, w.ID())
	var busy *BusyError
	if !errors.As(err, &busy) || busy.Pid != os.Getpid() {
		t.Fatalf("second writer: err = %v, want *BusyError with pid %d", err, os.Getpid())
	}
	if want := fmt.Sprintf("run %s is being written by pid %d", w.ID(), os.Getpid()); err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	// The first writer is unaffected.
	if ev, err := w.Append("still", 1, nil, true); err != nil || ev.Seq != 1 {
		t.Errorf("first writer Append = %d, %v; want seq 1", ev.Seq, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w2, err := OpenWriter(root, w.ID())
	if err != nil {
		t.Fatalf("OpenWriter after Close: %v", err)
	}
	if ev, err := w2.Append("next", 2, nil, true); err != nil || ev.Seq != 2 {
		t.Errorf("Append = %d, %v; want seq 2", ev.Seq, err)
	}
	w2.Close()
	if err := w2.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close = %v, want ErrClosed", err)
	}
	if _, err := w2.Append("late", 3, nil, true); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close = %v, want ErrClosed", err)
	}
}

func TestIsLive(t *testing.T) {
	root := t.TempDir()
	w := mustCreate(t, root, "live", Meta{})
	if live, pid := IsLive(w.Dir()); !live || pid != os.Getpid() {
		t.Errorf("IsLive while writing = %v, %d; want true, %d", live, pid, os.Getpid())
	}
	r, err := Open(root, w.ID())
	if err != nil {
		t.Fatal(err)
	}
	if !r.Live || r.Pid != os.Getpid() || r.EffectiveStatus() != StatusRunning {
		t.Errorf("Open while writing: Live %v, Pid %d, status %q; want true, %d, running", r.Live, r.Pid, r.EffectiveStatus(), os.Getpid())
	}
	// A reader's probe must not disturb the writer.
	if _, err := w.Append("x", 0, nil, true); err != nil {
		t.Errorf("Append after probe: %v", err)
	}
	w.Close()
	if live, pid := IsLive(w.Dir()); live || pid != 0 {
		t.Errorf("IsLive after Close = %v, %d; want false, 0", live, pid)
	}
	// run.json still says running: the writer went away without finishing.
	if err := r.Refresh(); err != nil {
		t.Fatal(err)
	}
	if r.Live || r.EffectiveStatus() != StatusCrashed {
		t.Errorf("after Close: Live %v, status %q; want false, crashed", r.Live, r.EffectiveStatus())
	}
	if live, _ := IsLive(filepath.Join(root, "no-such-run")); live {
		t.Errorf("IsLive of a missing dir = true")
	}
}

func TestEffectiveStatus(t *testing.T) {
	tests := []struct {
		status string
		live   bool
		want   string
	}{
		{StatusRunning, true, StatusRunning},
		{StatusRunning, false, StatusCrashed},
		{StatusPaused, true, StatusPaused},
		{StatusPaused, false, StatusCrashed},
		{StatusFinished, false, StatusFinished},
		{StatusStopped, false, StatusStopped},
		{StatusError, false, StatusError},
		{StatusCrashed, false, StatusCrashed},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s live=%v", tt.status, tt.live), func(t *testing.T) {
			r := Run{Meta: Meta{Status: tt.status}, Live: tt.live}
			if got := r.EffectiveStatus(); got != tt.want {
				t.Errorf("EffectiveStatus() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCheckpoints(t *testing.T) {
	root := t.TempDir()
	w := mustCreate(t, root, "ckpt", Meta{})
	defer w.Close()
	w.SetKeep(3)
	ckpt := func(step int) []byte { return []byte(fmt.Sprintf("state at %d", step)) }
	steps := []struct {
		step  int
		final bool
		want  []int
	}{
		{step: 10, want: []int{10}},
		{step: 20, want: []int{10, 20}},
		{step: 30, want: []int{10, 20, 30}},
		{step: 40, want: []int{20, 30, 40}},
		{step: 50, want: []int{30, 40, 50}},
		{step: 60, final: true, want: []int{40, 50, 60}},
		{step: 70, want: []int{50, 60, 70}},
		{step: 80, want: []int{60, 70, 80}},
		{step: 90, want: []int{60, 70, 80, 90}},
		{step: 100, want: []int{60, 80, 90, 100}},
		{step: 10_000_000, want: []int{60, 90, 100, 10_000_000}},
	}
	r := &Run{Dir: w.Dir()}
	for _, s := range steps {
		write := w.WriteCheckpoint
		if s.final {
			write = w.WriteFinalCheckpoint
		}
		if err := write(s.step, ckpt(s.step)); err != nil {
			t.Fatalf("write checkpoint %d: %v", s.step, err)
		}
		got, err := r.Checkpoints()
		if err != nil || !reflect.DeepEqual(got, s.want) {
			t.Fatalf("after step %d: Checkpoints() = %v, %v; want %v", s.step, got, err, s.want)
		}
	}
	if m := w.Meta(); !reflect.DeepEqual(m.Pinned, []int{60}) {
		t.Errorf("Pinned = %v, want [60]", m.Pinned)
	}
	for _, tt := range []struct {
		at       int
		wantStep int
		wantErr  bool
	}{
		{at: 59, wantErr: true},
		{at: 60, wantStep: 60},
		{at: 89, wantStep: 60},
		{at: 95, wantStep: 90},
		{at: 100, wantStep: 100},
		{at: 1 << 40, wantStep: 10_000_000},
	} {
		step, b, err := r.LatestCheckpointAtOrBefore(tt.at)
		if tt.wantErr {
			if !errors.Is(err, ErrNoCheckpoint) {
				t.Errorf("LatestCheckpointAtOrBefore(%d) error = %v, want ErrNoCheckpoint", tt.at, err)
			}
			continue
		}
		if err != nil || step != tt.wantStep || !bytes.Equal(b, ckpt(tt.wantStep)) {
			t.Errorf("LatestCheckpointAtOrBefore(%d) = %d, %q, %v; want %d, %q", tt.at, step, b, err, tt.wantStep, ckpt(tt.wantStep))
		}
	}
	if _, err := r.Checkpoint(70); !errors.Is(err, ErrNoCheckpoint) {
		t.Errorf("Checkpoint(70) error = %v, want ErrNoCheckpoint", err)
	}
	// Overwriting a step replaces it whole.
	if err := w.WriteCheckpoint(100, []byte("v2")); err != nil {
		t.Fatal(err)
	}
	if b, err := r.Checkpoint(100); err != nil || string(b) != "v2" {
		t.Errorf("Checkpoint(100) = %q, %v; want v2", b, err)
	}
	if err := w.WriteCheckpoint(-1, nil); err == nil {
		t.Errorf("WriteCheckpoint(-1) = nil, want an error")
	}
	assertNoTemps(t, w.Dir())
}

// assertNoTemps fails if a temp file is left in a run.
func assertNoTemps(t *testing.T, dir string) {
	t.Helper()
	for _, d := range []string{dir, filepath.Join(dir, ckptDirName)} {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if atomicfile.IsTemp(e.Name()) {
				t.Errorf("temp file %s left behind", filepath.Join(d, e.Name()))
			}
		}
	}
}

func TestAppendWriteErrors(t *testing.T) {
	tests := []struct {
		name    string
		fault   faultyFile
		wantErr error
	}{
		{name: "disk full mid-line", fault: faultyFile{budget: 10}, wantErr: syscall.ENOSPC},
		{name: "disk full at once", fault: faultyFile{budget: 0}, wantErr: syscall.ENOSPC},
		{name: "fsync fails", fault: faultyFile{budget: -1, syncErr: syscall.EIO}, wantErr: syscall.EIO},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			w := mustCreate(t, root, "full", Meta{})
			defer w.Close()
			mustAppend(t, w, 3)
			path := filepath.Join(w.Dir(), eventsName)
			before, _ := os.ReadFile(path)
			fault := tt.fault
			w.inject(func(f file) file { fault.file = f; return &fault })
			_, err := w.Append("step", 3, map[string]string{"pad": strings.Repeat("x", 100)}, true)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Append error = %v, want %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name %s", err, path)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
				t.Errorf("log changed by a failed Append:\n%q\nwant\n%q", after, before)
			}
			evs, warns := readLog(t, w.Dir())
			if got := seqs(evs); !reflect.DeepEqual(got, []int{1, 2, 3}) || len(warns) != 0 {
				t.Errorf("log after failure: seqs %v, warnings %v; want [1 2 3], none", got, warns)
			}
			w.uninject()
			if ev, err := w.Append("step", 3, nil, true); err != nil || ev.Seq != 4 {
				t.Errorf("Append after the disk recovers = seq %d, %v; want 4", ev.Seq, err)
			}
			evs, warns = readLog(t, w.Dir())
			if got := seqs(evs); !reflect.DeepEqual(got, []int{1, 2, 3, 4}) || len(warns) != 0 {
				t.Errorf("final log: seqs %v, warnings %v; want [1 2 3 4], none", got, warns)
			}
		})
	}
}

func TestAppendUnrepairable(t *testing.T) {
	root := t.TempDir()
	w := mustCreate(t, root, "stuck", Meta{})
	mustAppend(t, w, 3)
	w.inject(func(f file) file { return &faultyFile{file: f, budget: 10, truncErr: syscall.EIO} })
	if _, err := w.Append("step", 3, nil, true); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Append error = %v, want ENOSPC", err)
	}
	w.uninject()
	if _, err := w.Append("step", 4, nil, true); err == nil || !strings.Contains(err.Error(), "needs repair") {
		t.Errorf("Append on a log with a partial line = %v, want a needs-repair error", err)
	}
	// The partial line is a torn tail to readers, never a corrupt middle.
	evs, warns := readLog(t, w.Dir())
	if got := seqs(evs); !reflect.DeepEqual(got, []int{1, 2, 3}) || len(warns) != 1 || warns[0].Line != 4 {
		t.Errorf("log: seqs %v, warnings %v; want [1 2 3] and a warning at line 4", got, warns)
	}
	w.Close()
	w2, err := OpenWriter(root, w.ID())
	if err != nil {
		t.Fatalf("OpenWriter: %v", err)
	}
	defer w2.Close()
	if ev, err := w2.Append("step", 4, nil, true); err != nil || ev.Seq != 4 {
		t.Errorf("Append after reopen = seq %d, %v; want 4", ev.Seq, err)
	}
}

func TestAtomicWriteErrors(t *testing.T) {
	root := t.TempDir()
	w := mustCreate(t, root, "atomic", Meta{Steps: 1})
	defer w.Close()
	if err := w.WriteCheckpoint(5, []byte("good")); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteSummary([]byte(`{"v":1}`)); err != nil {
		t.Fatal(err)
	}
	w.inject(func(f file) file { return &faultyFile{file: f, budget: 3} })
	r := &Run{Dir: w.Dir()}
	tests := []struct {
		name  string
		write func() error
		check func() error
	}{
		{
			name:  "checkpoint",
			write: func() error { return w.WriteCheckpoint(5, []byte("much better state")) },
			check: func() error {
				b, err := r.Checkpoint(5)
				if err != nil || string(b) != "good" {
					return fmt.Errorf("Checkpoint(5) = %q, %v; want the old bytes", b, err)
				}
				return nil
			},
		},
		{
			name:  "new checkpoint",
			write: func() error { return w.WriteCheckpoint(6, []byte("state")) },
			check: func() error {
				if s, err := r.Checkpoints(); err != nil || !reflect.DeepEqual(s, []int{5}) {
					return fmt.Errorf("Checkpoints() = %v, %v; want [5]", s, err)
				}
				return nil
			},
		},
		{
			name:  "summary",
			write: func() error { return w.WriteSummary([]byte(`{"v":2222}`)) },
			check: func() error {
				if b, err := r.Summary(); err != nil || string(b) != `{"v":1}` {
					return fmt.Errorf("Summary() = %s, %v; want the old one", b, err)
				}
				return nil
			},
		},
		{
			name:  "meta",
			write: func() error { return w.SetMeta(func(m *Meta) { m.Steps = 2 }) },
			check: func() error {
				m, err := readMeta(w.Dir())
				if err != nil || m.Steps != 1 || w.Meta().Steps != 1 {
					return fmt.Errorf("run.json steps = %d (%v), writer has %d; want 1", m.Steps, err, w.Meta().Steps)
				}
				return nil
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.write(); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("write error = %v, want ENOSPC", err)
			}
			if err := tt.check(); err != nil {
				t.Error(err)
			}
			assertNoTemps(t, w.Dir())
		})
	}
}

func TestStaleTempsRemoved(t *testing.T) {
	root := t.TempDir()
	w := mustCreate(t, root, "temps", Meta{})
	w.Close()
	for _, p := range []string{
		filepath.Join(w.Dir(), ".run.json"+atomicfile.TempMarker+"123"),
		filepath.Join(w.Dir(), ckptDirName, ".step-0000001.ckpt"+atomicfile.TempMarker+"9"),
	} {
		if err := os.WriteFile(p, []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, _ := Open(root, w.ID())
	if s, err := r.Checkpoints(); err != nil || len(s) != 0 {
		t.Errorf("Checkpoints() with only a temp file = %v, %v; want none", s, err)
	}
	w2, err := OpenWriter(root, w.ID())
	if err != nil {
		t.Fatal(err)
	}
	w2.Close()
	assertNoTemps(t, w.Dir())
}

func TestConcurrentAppend(t *testing.T) {
	w := mustCreate(t, t.TempDir(), "conc", Meta{})
	defer w.Close()
	const goroutines, each = 8, 50
	var wg sync.WaitGroup
	got := make([][]int, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				ev, err := w.Append("step", i, map[string]int{"g": g}, i%10 == 0)
				if err != nil {
					t.Errorf("Append: %v", err)
					return
				}
				got[g] = append(got[g], ev.Seq)
			}
		}()
	}
	wg.Wait()
	seen := map[int]bool{}
	for _, s := range got {
		for _, q := range s {
			if seen[q] {
				t.Errorf("seq %d returned twice", q)
			}
			seen[q] = true
		}
	}
	evs, warns := readLog(t, w.Dir())
	if len(evs) != goroutines*each || len(warns) != 0 || len(seen) != goroutines*each {
		t.Errorf("log has %d events (%v), %d distinct seqs returned; want %d", len(evs), warns, len(seen), goroutines*each)
	}
	var data struct{ G int }
	if err := json.Unmarshal(evs[0].Data, &data); err != nil {
		t.Errorf("event data %s: %v", evs[0].Data, err)
	}
}

// A run keeps one best checkpoint: each replaces the one before, outside
// retention, and a fork can find it by its step while it is the best.
func TestBestCheckpoint(t *testing.T) {
	root := t.TempDir()
	w := mustCreate(t, root, "best", Meta{})
	defer w.Close()
	w.SetKeep(1)
	r := &Run{Dir: w.Dir()}
	if _, _, err := r.BestCheckpoint(); !errors.Is(err, ErrNoBest) {
		t.Fatalf("no best yet: err = %v, want ErrNoBest", err)
	}
	for _, step := range []int{0, 30, 120} {
		if err := w.WriteBestCheckpoint(step, []byte(fmt.Sprintf("best at %d", step))); err != nil {
			t.Fatal(err)
		}
		// Ordinary checkpoints and their retention leave it alone.
		if err := w.WriteCheckpoint(step+10, []byte("ckpt")); err != nil {
			t.Fatal(err)
		}
		got, b, err := r.BestCheckpoint()
		if err != nil || got != step || string(b) != fmt.Sprintf("best at %d", step) {
			t.Errorf("after best %d: BestCheckpoint() = %d, %q, %v", step, got, b, err)
		}
		if steps, _ := r.Checkpoints(); !reflect.DeepEqual(steps, []int{step + 10}) {
			t.Errorf("after best %d: Checkpoints() = %v, want [%d]", step, steps, step+10)
		}
	}
	if b, err := r.BestCheckpointAt(120); err != nil || string(b) != "best at 120" {
		t.Errorf("BestCheckpointAt(120) = %q, %v", b, err)
	}
	if _, err := r.BestCheckpointAt(30); !errors.Is(err, ErrNoBest) || !strings.Contains(err.Error(), "a later best replaced it") {
		t.Errorf("BestCheckpointAt(30) after a later best: err = %v", err)
	}
	ents, _ := os.ReadDir(filepath.Join(w.Dir(), ckptDirName))
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if want := []string{"best-0000120.ckpt", "step-0000130.ckpt"}; !reflect.DeepEqual(names, want) {
		t.Errorf("checkpoints/ holds %v, want %v", names, want)
	}
}

// Hidden folders of creations and removals a crash cut off are removed
// by the next Create once stale; a fresh one, or one a live process
// holds, is kept.
func TestCreateRemovesStale(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-2 * staleAge)
	mk := func(name string, at time.Time) string {
		dir := filepath.Join(root, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, configName), []byte("seed = 1\n"), 0o644)
		if err := os.Chtimes(dir, at, at); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	staleNew := mk(newPrefix+"20260101-0000-aaaa-00000000", old)
	staleRm := mk(removingPrefix+"20260101-0000-bbbb-00000000", old)
	fresh := mk(newPrefix+"20260101-0000-cccc-00000000", time.Now())
	held := mk(newPrefix+"20260101-0000-dddd-00000000", time.Now())
	lf, err := acquireLock(held, "held")
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	os.Chtimes(held, old, old)
	w := mustCreate(t, root, "next", Meta{})
	w.Close()
	for dir, want := range map[string]bool{staleNew: false, staleRm: false, fresh: true, held: true} {
		if _, err := os.Stat(dir); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", filepath.Base(dir), err == nil, want)
		}
	}
}

// A new run's folder whose id another process took meanwhile takes a
// fresh id, and its run.json says so.
func TestCreatePublishTaken(t *testing.T) {
	root := t.TempDir()
	tmp := filepath.Join(root, newPrefix+"x")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	const taken = "20260101-0000-aaaa"
	meta := Meta{ID: taken, Name: "n", Created: time.Now().Format(time.RFC3339), Status: StatusRunning, Format: Format}
	w, err := create(tmp, taken, "seed = 1\n", meta)
	if err != nil {
		t.Fatal(err)
	}
	makeRun(t, root, taken, "other")
	if err := w.publish(root); err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.ID() == taken || w.Dir() != filepath.Join(root, w.ID()) {
		t.Fatalf("published as %s in %s; want a fresh id and its folder", w.ID(), w.Dir())
	}
	r, err := Open(root, w.ID())
	if err != nil || r.Meta.ID != w.ID() || r.Meta.Name != "n" {
		t.Fatalf("Open(%s) = %+v, %v", w.ID(), r, err)
	}
	if o, err := Open(root, taken); err != nil || o.Meta.Name != "other" {
		t.Errorf("the run that had the id: %+v, %v", o, err)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("hidden folder still there: %v", err)
	}
}

package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"selmix/core/experiment"
	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/runs"
)

func open(t testing.TB, root, id string) (*runs.Run, *History) {
	t.Helper()
	r, err := runs.Open(root, id)
	if err != nil {
		t.Fatal(err)
	}
	h, err := Load(r)
	if err != nil {
		t.Fatal(err)
	}
	return r, h
}

func refreshes(snaps []loop.Snapshot) []loop.Snapshot {
	var out []loop.Snapshot
	for _, s := range snaps {
		if s.Kind == loop.KindRefresh {
			out = append(out, s)
		}
	}
	return out
}

func f32(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(float32(x))
	}
	return out
}

// What the Recorder writes, Load reads back: every scalar and per-class
// vector exactly, G and P as float32, controls, the final summary; and
// record.matrices_every keeps G and P at every n-th refresh and the last.
func TestRecordLoadRoundTrip(t *testing.T) {
	const K, n = 7, 8
	snaps := synth(K, n, 10, 1)
	root := t.TempDir()
	id := record(t, root, "[record]\nmatrices_every = 3\n", K, snaps)
	r, h := open(t, root, id)

	if h.Format != 2 || r.Meta.Format != 2 {
		t.Errorf("format %d (run.json %d), want 2", h.Format, r.Meta.Format)
	}
	want := refreshes(snaps)
	if len(h.Refreshes) != n {
		t.Fatalf("%d refreshes, want %d", len(h.Refreshes), n)
	}
	for i, rf := range h.Refreshes {
		s := want[i]
		ws := *s.Refresh
		// The log keeps no Best flag: run.json's best and best_step
		// record what the flags said (checked below).
		ws.G, ws.P, ws.Best = nil, nil, false
		if !reflect.DeepEqual(rf.Stats, ws) {
			t.Errorf("refresh %d stats:\n got %+v\nwant %+v", i, rf.Stats, ws)
		}
		if rf.Step != s.Step || rf.Total != s.Total || rf.State != s.State || rf.Hyper != s.Hyper {
			t.Errorf("refresh %d: step %d total %d state %s hyper %+v; want %d %d %s %+v", i, rf.Step, rf.Total, rf.State, rf.Hyper, s.Step, s.Total, s.State, s.Hyper)
		}
		if (rf.Loss == nil) != math.IsNaN(s.Loss) || (rf.Loss != nil && *rf.Loss != s.Loss) {
			t.Errorf("refresh %d: loss %v, want %v", i, rf.Loss, s.Loss)
		}
		kept := i%3 == 0 || i == n-1
		if h.HasMatrices(i) != kept {
			t.Errorf("refresh %d: has matrices %v, want %v (every 3rd and the last)", i, h.HasMatrices(i), kept)
		}
		G, P, err := h.Matrices(i)
		if !kept {
			if !errors.Is(err, ErrNoMatrices) {
				t.Errorf("refresh %d: Matrices error %v, want ErrNoMatrices", i, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(G, f32(s.Refresh.G)) || !reflect.DeepEqual(P, f32(s.Refresh.P)) {
			t.Errorf("refresh %d: G, P are not the float32 roundings of what was recorded", i)
		}
	}
	if h.LastMatrices() != n-1 {
		t.Errorf("LastMatrices = %d, want %d", h.LastMatrices(), n-1)
	}
	if len(h.Controls) != 1 || h.Controls[0] != *snaps[1].Ack {
		t.Errorf("controls %+v, want %+v", h.Controls, *snaps[1].Ack)
	}
	wantSum := *snaps[len(snaps)-1].Summary
	// α is not in the summary: the reader takes the last refresh's.
	wantSum.Alpha = metric.Params{Alpha: h.Refreshes[len(h.Refreshes)-1].Hyper.Alpha}.WithDefaults(K).Alpha
	if wantSum.Alpha == 0 {
		t.Fatal("no α from the last refresh")
	}
	if h.Final == nil || !reflect.DeepEqual(*h.Final, wantSum) {
		t.Errorf("final summary:\n got %+v\nwant %+v", h.Final, wantSum)
	}
	if len(h.Starts) != 1 || h.Starts[0].K != K || h.Stopped() != nil || len(h.Warnings) != 0 {
		t.Errorf("starts %+v, stopped %v, warnings %v", h.Starts, h.Stopped(), h.Warnings)
	}
	// summary.json is the final event's payload.
	b, err := r.Summary()
	if err != nil {
		t.Fatal(err)
	}
	var sd SummaryData
	if err := json.Unmarshal(b, &sd); err != nil {
		t.Fatal(err)
	}
	noAlpha := wantSum
	noAlpha.Alpha = 0 // summary.json does not hold α (0: the default)
	if got := sd.Summary(); !reflect.DeepEqual(got, noAlpha) {
		t.Errorf("summary.json decodes to %+v", got)
	}
	// The log holds no matrix and no per-class vector of a refresh.
	log, _ := os.ReadFile(filepath.Join(r.Dir, "events.jsonl"))
	for _, line := range bytes.Split(bytes.TrimSpace(log), []byte("\n")) {
		if bytes.Contains(line, []byte(`"kind":"refresh"`)) && (bytes.Contains(line, []byte(`"recall":[`)) || bytes.Contains(line, []byte(`"G"`))) {
			t.Fatalf("a refresh line holds arrays: %.300s", line)
		}
	}
	if r.Meta.Status != runs.StatusFinished || r.Meta.BestStep < 0 {
		t.Errorf("run.json: status %s, best step %d", r.Meta.Status, r.Meta.BestStep)
	}
}

// A stop is a session marker: kind stop, scalars only, no record in
// arrays.bin; the run is stopped and resumable, and summary.json holds the
// full summary.
func TestStopEvent(t *testing.T) {
	const K = 4
	snaps := synth(K, 3, 10, 2)
	stop := snaps[len(snaps)-1]
	stop.State = loop.Stopped
	stop.Step = 15
	sum := *stop.Summary
	sum.Steps = 15
	stop.Summary = &sum
	snaps[len(snaps)-1] = stop
	root := t.TempDir()
	id := record(t, root, "", K, snaps)
	r, h := open(t, root, id)
	arrBefore := int64(0)
	evs, _, _ := r.Events()
	for _, ev := range evs {
		for _, ref := range ev.Arrays {
			arrBefore = max(arrBefore, ref.Offset+ref.Length)
		}
		if ev.Kind == KindStop && len(ev.Arrays) > 0 {
			t.Error("the stop event refers to arrays")
		}
	}
	if fi, _ := os.Stat(runs.ArraysPath(r.Dir)); fi.Size() != arrBefore {
		t.Errorf("arrays.bin has %d bytes, the events refer to %d", fi.Size(), arrBefore)
	}
	if evs[len(evs)-1].Kind != KindStop || h.Final != nil || len(h.Stops) != 1 {
		t.Fatalf("last event %s, final %v, stops %d; want a stop", evs[len(evs)-1].Kind, h.Final, len(h.Stops))
	}
	if bytes.Contains(evs[len(evs)-1].Data, []byte(`"recall"`)) {
		t.Errorf("stop event carries per-class vectors: %.300s", evs[len(evs)-1].Data)
	}
	got := h.Stopped()
	if got == nil || got.Steps != 15 || got.TestAfter.MeanRecall != sum.TestAfter.MeanRecall || got.TestAfter.Recall != nil {
		t.Errorf("Stopped() = %+v, want the scalar summary at step 15", got)
	}
	if r.Meta.Status != runs.StatusStopped {
		t.Errorf("status %s, want stopped", r.Meta.Status)
	}
	b, _ := r.Summary()
	if !bytes.Contains(b, []byte(`"recall"`)) {
		t.Error("summary.json of a stopped run lacks the per-class vectors")
	}
	// A session started after the stop makes it history, not the end.
	rec, err := Reopen(root, id)
	if err != nil {
		t.Fatal(err)
	}
	rec.LogStart(Start{Step: 10, Total: 20, K: K, Resumed: true})
	rec.Close(false)
	_, h = open(t, root, id)
	if h.Stopped() != nil || len(h.Stops) != 1 {
		t.Errorf("after a new session: Stopped() = %v, stops %d", h.Stopped(), len(h.Stops))
	}
}

// A killed run resumed from a checkpoint reproduces the events after it;
// the recorder writes each once, and the log (session markers aside) and
// arrays.bin (byte for byte) equal an uninterrupted run's, torn tails in
// either file notwithstanding.
func TestResumeEqualsUninterrupted(t *testing.T) {
	const K = 6
	snaps := synth(K, 9, 10, 3)
	config := "[record]\nmatrices_every = 2\n"
	root := t.TempDir()
	ref := record(t, root, config, K, snaps)
	refRun, _ := open(t, root, ref)

	for _, c := range []struct {
		name       string
		cut        int // snapshots written before the "kill"
		resumeFrom int // first snapshot the resumed engine publishes
		tornEvent  bool
		tornRecord bool
		stop       bool // the first session ends with a stop, not a kill
	}{
		{"kill after refresh 5, resume from 2", 6, 2, false, false, false},
		{"torn event line", 5, 3, true, false, false},
		{"record without its event", 4, 1, false, true, false},
		{"both torn", 7, 4, true, true, false},
		{"stop, resume from the start", 5, 0, false, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec, err := New(root, "resumed", config, Options{MatricesEvery: 2}, runs.Meta{})
			if err != nil {
				t.Fatal(err)
			}
			id := rec.Writer().ID()
			total := snaps[len(snaps)-1].Total
			rec.LogStart(synthStart(K, total))
			first := snaps[:c.cut]
			if c.stop {
				stop := snaps[len(snaps)-1]
				stop.State, stop.Step = loop.Stopped, snaps[c.cut-1].Step
				first = append(append([]loop.Snapshot{}, first...), stop)
			}
			feed(t, rec, first)
			rec.Close(true)
			dir := rec.Writer().Dir()
			if c.tornRecord {
				b, _ := runs.EncodeRecord(vectorArrays(snaps[c.cut].Refresh))
				appendFile(t, runs.ArraysPath(dir), b[:len(b)/2])
			}
			if c.tornEvent {
				appendFile(t, filepath.Join(dir, "events.jsonl"), []byte(`{"seq":99,"time":"2026-`))
			}
			rec, err = Reopen(root, id)
			if err != nil {
				t.Fatal(err)
			}
			rec.LogStart(Start{Step: snaps[c.resumeFrom].Step, Total: total, K: K, Resumed: true})
			feed(t, rec, snaps[c.resumeFrom:])
			rec.Close(false)

			got, _ := open(t, root, id)
			if a, b := outcome(t, got), outcome(t, refRun); !reflect.DeepEqual(a, b) {
				t.Errorf("log differs from the uninterrupted run's:\n got %d events\nwant %d events\n%s", len(a), len(b), diff(a, b))
			}
			ga, _ := os.ReadFile(runs.ArraysPath(got.Dir))
			wa, _ := os.ReadFile(runs.ArraysPath(refRun.Dir))
			if !bytes.Equal(ga, wa) {
				t.Errorf("arrays.bin differs: %d bytes, want %d", len(ga), len(wa))
			}
		})
	}
}

func appendFile(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

// outcome is a run's log without session markers and times, the final
// event's wall time zeroed; arrays by reference, which must be equal too.
func outcome(t *testing.T, r *runs.Run) []string {
	t.Helper()
	evs, warns, err := r.Events()
	if err != nil || len(warns) > 0 {
		t.Fatalf("%v %v", err, warns)
	}
	var out []string
	for _, ev := range evs {
		if ev.Kind == KindStart || ev.Kind == KindStop {
			continue
		}
		data := ev.Data
		if ev.Kind == KindFinal {
			var s SummaryData
			json.Unmarshal(data, &s)
			s.Seconds = 0
			data, _ = json.Marshal(s)
		}
		refs, _ := json.Marshal(ev.Arrays)
		out = append(out, ev.Kind+" "+string(refs)+" "+string(data))
	}
	return out
}

func diff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return "first difference:\n  got  " + trunc(a[i]) + "\n  want " + trunc(b[i])
		}
	}
	return "one is a prefix of the other"
}

func trunc(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// A format-1 run opens but is not continued: its log cannot take format-2
// events.
func TestReopenRefusesFormat1(t *testing.T) {
	root := copyV1(t)
	_, err := Reopen(root, "20261123-1013-2bd9")
	if err == nil || !strings.Contains(err.Error(), "format 1") {
		t.Fatalf("Reopen of a format-1 run: %v", err)
	}
	if _, err := os.Stat(runs.ArraysPath(filepath.Join(root, "20261123-1013-2bd9"))); !errors.Is(err, os.ErrNotExist) {
		t.Error("refusing left an arrays.bin behind")
	}
	r, _ := runs.Open(root, "20261123-1013-2bd9")
	if r.Meta.Status != runs.StatusFinished || r.Live {
		t.Errorf("refusing changed the run: status %s, live %v", r.Meta.Status, r.Live)
	}
}

// copyV1 copies the format-1 fixture runs into a temp root.
func copyV1(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	src := filepath.Join("testdata", "v1run")
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		os.MkdirAll(filepath.Join(root, e.Name()), 0o755)
		files, _ := os.ReadDir(filepath.Join(src, e.Name()))
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(src, e.Name(), f.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, e.Name(), f.Name()), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

// The recording's options are the configuration's [record]: New takes
// them typed, Reopen reads them from the run's config.toml, the old name
// of record.checkpoint_every (finetune.checkpoint_every) included.
func TestOptions(t *testing.T) {
	if got, want := OptionsOf(experiment.Default().Record), (Options{MatricesEvery: 1, CheckpointEvery: 5, Best: true}); got != want {
		t.Errorf("OptionsOf the default [record] = %+v, want %+v", got, want)
	}
	for _, o := range []Options{{MatricesEvery: -2}, {CheckpointEvery: -1}} {
		if _, err := New(t.TempDir(), "x", "", o, runs.Meta{}); err == nil || !strings.Contains(err.Error(), "want ≥ 1") {
			t.Errorf("New with %+v: %v, want it refused", o, err)
		}
	}
	root := t.TempDir()
	for _, c := range []struct {
		config string
		want   Options
	}{
		{"", Options{MatricesEvery: 1, CheckpointEvery: 5, Best: true}},
		{"[record]\nmatrices_every = 7\ncheckpoint_every = 2\nbest = false\n", Options{MatricesEvery: 7, CheckpointEvery: 2}},
		{"[finetune]\ncheckpoint_every = 3\n[record]\nmatrices_every = 4\n", Options{MatricesEvery: 4, CheckpointEvery: 3, Best: true}},
	} {
		rec, err := New(root, "opt", c.config, Options{}, runs.Meta{})
		if err != nil {
			t.Fatal(err)
		}
		if got := rec.Options(); got != (Options{}) {
			t.Errorf("New(%q, Options{}).Options() = %+v: want what it was given", c.config, got)
		}
		id := rec.Writer().ID()
		rec.Close(true)
		re, err := Reopen(root, id)
		if err != nil {
			t.Fatal(err)
		}
		if got := re.Options(); got != c.want || re.every != c.want.MatricesEvery {
			t.Errorf("Reopen of a run recorded with %q: %+v (G and P every %d), want %+v", c.config, got, re.every, c.want)
		}
		re.Close(true)
	}
}

// A scheduled stop's checkpoint is pinned (PinAt): retention keeps it
// while the run goes on, as it keeps the final one; others are pruned.
func TestPinAt(t *testing.T) {
	root := t.TempDir()
	rec, err := New(root, "pin", "", Options{}, runs.Meta{Objective: "min-recall", Policy: "selmix"})
	if err != nil {
		t.Fatal(err)
	}
	rec.Writer().SetKeep(1)
	rec.PinAt(101)
	st := loop.NewStream()
	st.Close()
	ck := rec.Checkpointer(st)
	for _, c := range []struct {
		step  int
		final bool
	}{{50, false}, {101, false}, {150, false}, {200, false}, {300, true}} {
		if err := ck(c.step, []byte("state"), c.final); err != nil {
			t.Fatal(err)
		}
	}
	if got := rec.Writer().Meta().Pinned; !slices.Equal(got, []int{101, 300}) {
		t.Errorf("pinned %v, want [101 300]", got)
	}
	if err := rec.Close(false); err != nil {
		t.Fatal(err)
	}
	r, err := runs.Open(root, rec.Writer().ID())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.Checkpoints(); err != nil || !slices.Equal(got, []int{101, 300}) {
		t.Errorf("checkpoints %v (%v), want [101 300]", got, err)
	}
}

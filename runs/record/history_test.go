package record

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/runs"
)

func noArrays(runs.Ref) ([]runs.Array, error) { panic("no arrays in this test") }

// A log's payloads are decoded by kind: a known kind with a bad payload is
// an error, an unknown kind is an error, and nothing panics.
func TestHistoryAddV1(t *testing.T) {
	h := History{Format: 1}
	for _, c := range []struct {
		kind, data string
		ok         bool
	}{
		{KindStart, `{"step":0,"total":10,"k":3,"train_counts":[5,2,1]}`, true},
		{KindRefresh, `{"step":5,"total":10,"state":"running","hyper":{"S":10},"stats":{"Step":5,"Psi":0.5}}`, true},
		{KindControl, `{"Control":{"Op":4,"Key":"s","Value":"3"},"Step":7}`, true},
		{KindControl, `{"Control":{"Op":9},"Step":7}`, false},
		{KindFinal, `{"Steps":10}`, true},
		{KindError, `{"error":"boom"}`, true},
		{KindRefresh, `{"step":"five"}`, false},
		{"mystery", `{}`, false},
	} {
		err := h.add(runs.Event{Kind: c.kind, Data: []byte(c.data)}, noArrays)
		if (err == nil) != c.ok {
			t.Errorf("%s %s: err %v, want ok=%v", c.kind, c.data, err, c.ok)
		}
	}
	if len(h.Starts) != 1 || h.Starts[0].TrainCounts[1] != 2 || len(h.Refreshes) != 1 || h.Refreshes[0].Stats.Psi != 0.5 ||
		len(h.Controls) != 1 || h.Controls[0].Control.Op != loop.OpSet || h.Final == nil || h.Final.Steps != 10 || h.Errors[0].Err != "boom" {
		t.Errorf("decoded history wrong: %+v", h)
	}
	// Replayable keeps accepted sets (and stops on request) after a step,
	// pinned to the step they took effect.
	h.Controls = append(h.Controls,
		loop.Ack{Control: loop.Control{Op: loop.OpPause}, Step: 8},
		loop.Ack{Control: loop.Control{Op: loop.OpSet, Key: "lr", Value: "x"}, Step: 8, Err: "bad"},
		loop.Ack{Control: loop.Control{Op: loop.OpStop}, Step: 9})
	got := h.Replayable(6, true)
	if len(got) != 2 || got[0].Key != "s" || got[0].At != 7 || got[1].Op != loop.OpStop || got[1].At != 9 {
		t.Errorf("Replayable(6, true) = %+v, want set s at 7 and stop at 9", got)
	}
	if got := h.Replayable(7, false); len(got) != 0 {
		t.Errorf("Replayable(7, false) = %+v, want none", got)
	}
}

func TestHistoryAddV2(t *testing.T) {
	h := History{Format: 2, arrays: "arrays.bin"}
	vectors := func(runs.Ref) ([]runs.Array, error) {
		return []runs.Array{
			{Name: "prior", DType: runs.Float64, Shape: []int{2}, Data: []float64{0.5, 0.5}},
			{Name: "recall", DType: runs.Float64, Shape: []int{2}, Data: []float64{0.25, 1}},
			{Name: "coverage", DType: runs.Float64, Shape: []int{2}, Data: []float64{0.4, 0.6}},
		}, nil
	}
	ref := []runs.Ref{{Offset: 0, Length: 100}}
	for _, c := range []struct {
		kind, data string
		refs       []runs.Ref
		ok         bool
	}{
		{KindRefresh, `{"step":5,"total":10,"state":"running","hyper":{"form":"paper","s":10,"future_key":1},"k":2,"psi":0.5,"objectives":{"min-recall":0.25,"new-objective":3},"report":{"k":2,"worst":0}}`, ref, true},
		{KindRefresh, `{"step":5,"k":2,"hyper":{"form":"paper"}}`, nil, false},            // no arrays
		{KindRefresh, `{"step":5,"k":3,"hyper":{"form":"paper"}}`, ref, false},            // vectors of K=2
		{KindRefresh, `{"step":5,"k":2,"hyper":{"form":"sideways"}}`, ref, false},         // unknown form
		{KindRefresh, `{"step":5,"k":2,"psi":"NaN","hyper":{"form":"paper"}}`, ref, true}, // non-finite scalars
		{KindControl, `{"op":"set","key":"s","value":"3","step":7}`, nil, true},
		{KindControl, `{"op":"jump","step":7}`, nil, false},
		{KindStop, `{"steps":8,"objective":"min-recall","test_after":{"mean_recall":0.5}}`, nil, true},
		{KindFinal, `{"steps":10,"test_objectives_after":{"gmean":0.7}}`, nil, true},
	} {
		err := h.add(runs.Event{Kind: c.kind, Data: []byte(c.data), Arrays: c.refs}, vectors)
		if (err == nil) != c.ok {
			t.Errorf("%s %s: err %v, want ok=%v", c.kind, c.data, err, c.ok)
		}
	}
	if len(h.Refreshes) != 2 {
		t.Fatalf("%d refreshes decoded, want 2", len(h.Refreshes))
	}
	rf := h.Refreshes[0]
	obj := rf.Stats.Objectives
	if obj[1] != 0.25 || !math.IsNaN(obj[0]) || len(obj) != len(metric.Objectives()) {
		t.Errorf("objectives %v: want min-recall 0.25 in its place, NaN where none was recorded", obj)
	}
	if rf.Stats.Report.Recall[0] != 0.25 || rf.Hyper.S != 10 || rf.Stats.K != 2 {
		t.Errorf("refresh decoded as %+v", rf)
	}
	if !math.IsNaN(h.Refreshes[1].Stats.Psi) {
		t.Errorf(`psi "NaN" decoded as %v`, h.Refreshes[1].Stats.Psi)
	}
	if len(h.Stops) != 1 || h.Stops[0].TestAfter.MeanRecall != 0.5 || h.Final == nil || h.Final.TestObjAfter[2] != 0.7 {
		t.Errorf("stops %+v final %+v", h.Stops, h.Final)
	}
	if h.Controls[0].Control.Op != loop.OpSet || h.Controls[0].Step != 7 {
		t.Errorf("control %+v", h.Controls[0])
	}
}

func FuzzHistoryAdd(f *testing.F) {
	for _, k := range []string{KindStart, KindRefresh, KindControl, KindFinal, KindStop, KindError} {
		f.Add(k, []byte(`{}`), 1)
		f.Add(k, []byte(`{}`), 2)
	}
	f.Add(KindRefresh, []byte(`{"stats":{"G":[1,2],"P":null,"Report":{"Recall":[0.5]}}}`), 1)
	f.Add(KindRefresh, []byte(`{"k":1,"hyper":{"form":"paper"},"objectives":{"x":"NaN"}}`), 2)
	f.Fuzz(func(t *testing.T, kind string, data []byte, format int) {
		h := History{Format: format}
		vectors := func(runs.Ref) ([]runs.Array, error) {
			return []runs.Array{{Name: "recall", Shape: []int{1}, Data: []float64{1}}}, nil
		}
		h.add(runs.Event{Kind: kind, Data: data, Arrays: []runs.Ref{{Length: 20}}}, vectors) // must not panic
	})
}

// The format-1 fixtures open: every number is what their log says, read
// here independently of the decoder (as untyped JSON), with objectives
// mapped from format 1's positions to names.
func TestLoadV1(t *testing.T) {
	root := filepath.Join("testdata", "v1run")
	for _, id := range []string{"20261123-1013-2bd9", "20261123-1019-6769"} {
		r, h := open(t, root, id)
		if h.Format != 1 {
			t.Errorf("%s: format %d, want 1", id, h.Format)
		}
		f, err := os.Open(filepath.Join(r.Dir, "events.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<24)
		var nref, nctl int
		for sc.Scan() {
			var ev struct {
				Kind string
				Data map[string]any
			}
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Fatal(err)
			}
			switch ev.Kind {
			case KindRefresh:
				rf := h.Refreshes[nref]
				st := ev.Data["stats"].(map[string]any)
				rep := st["Report"].(map[string]any)
				if got, want := rf.Stats.Report.Recall[3], rep["Recall"].([]any)[3].(float64); got != want {
					t.Errorf("%s refresh %d: recall[3] %v, want %v", id, nref, got, want)
				}
				if got, want := rf.Stats.Report.MinHTCoverage, rep["MinHTCoverage"].(float64); got != want {
					t.Errorf("%s refresh %d: min head/tail coverage %v, want %v", id, nref, got, want)
				}
				objs := st["Objectives"].([]any)
				for i, name := range []metric.Objective{metric.MeanRecall, metric.HMeanHTCov} {
					pos := []int{0, 8}[i]
					if got, want := rf.Stats.Objectives[name.Index()], objs[pos].(float64); got != want {
						t.Errorf("%s refresh %d: ψ %s %v, want %v", id, nref, name, got, want)
					}
				}
				G, P, err := h.Matrices(nref)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := G[17], st["G"].([]any)[17].(float64); got != want {
					t.Errorf("%s refresh %d: G[17] %v, want %v", id, nref, got, want)
				}
				if got, want := P[99], st["P"].([]any)[99].(float64); got != want {
					t.Errorf("%s refresh %d: P[99] %v, want %v", id, nref, got, want)
				}
				if got, want := rf.Hyper.S, ev.Data["hyper"].(map[string]any)["S"].(float64); got != want {
					t.Errorf("%s refresh %d: s %v, want %v", id, nref, got, want)
				}
				nref++
			case KindControl:
				a := h.Controls[nctl]
				c := ev.Data["Control"].(map[string]any)
				if a.Control.Op != loop.OpSet || a.Control.Key != c["Key"] || a.Control.Value != c["Value"] || float64(a.Step) != ev.Data["Step"].(float64) {
					t.Errorf("%s control %d: %+v, log says %v", id, nctl, a, ev.Data)
				}
				nctl++
			case KindFinal:
				if got, want := h.Final.TestAfter.Recall[6], ev.Data["TestAfter"].(map[string]any)["Recall"].([]any)[6].(float64); got != want {
					t.Errorf("%s final: test recall[6] %v, want %v", id, got, want)
				}
				if got, want := h.Final.TestObjAfter[1], ev.Data["TestObjAfter"].([]any)[1].(float64); got != want {
					t.Errorf("%s final: test ψ min-recall %v, want %v", id, got, want)
				}
			}
		}
		f.Close()
		if nref != len(h.Refreshes) || nctl != len(h.Controls) || h.Final == nil || nref == 0 {
			t.Errorf("%s: %d refreshes, %d controls decoded; log has %d, %d", id, len(h.Refreshes), len(h.Controls), nref, nctl)
		}
	}
}

// A record of arrays.bin that is missing or corrupt fails Load with one
// line naming the file, the offset and the reason.
func TestLoadCorruptArrays(t *testing.T) {
	root := t.TempDir()
	id := record(t, root, "", 3, synth(3, 3, 10, 4))
	r, _ := open(t, root, id)
	path := runs.ArraysPath(r.Dir)
	b, _ := os.ReadFile(path)
	b[20] ^= 0xff
	os.WriteFile(path, b, 0o644)
	_, err := Load(r)
	if err == nil || !strings.Contains(err.Error(), path+": record at offset 0: corrupt: checksum mismatch") || strings.Contains(err.Error(), "\n") {
		t.Errorf("Load with a corrupt record: %v", err)
	}
	os.WriteFile(path, b[:30], 0o644)
	if _, err := Load(r); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("Load with a cut sidecar: %v", err)
	}
}

// Snapshots replays a log in step order, controls before the refresh at
// their step, then the end: a final summary, or the stop of the last
// session.
func TestSnapshots(t *testing.T) {
	h := loop.DefaultHyper()
	stats := loop.Refresh{K: 2, Objectives: make([]float64, len(metric.Objectives()))}
	hist := &History{
		Starts: []Start{{Step: 0, Total: 100, K: 2}},
		Refreshes: []RefreshEvent{
			{Step: 0, Total: 100, State: loop.Running, Hyper: h, Stats: stats},
			{Step: 50, Total: 100, State: loop.Running, Hyper: h, Stats: stats},
		},
		Controls: []loop.Ack{{Control: loop.Control{Op: loop.OpSet, Key: "s", Value: "5"}, Step: 50}},
		Final:    &loop.Summary{Steps: 60},
	}
	got := Snapshots(hist)
	kinds := make([]loop.Kind, len(got))
	for i, s := range got {
		kinds[i] = s.Kind
		if s.Total != 100 {
			t.Errorf("snapshot %d Total = %d, want 100", i, s.Total)
		}
	}
	want := []loop.Kind{loop.KindRefresh, loop.KindControl, loop.KindRefresh, loop.KindFinal}
	if !reflect.DeepEqual(kinds, want) {
		t.Fatalf("kinds = %v, want %v (a control applies before the refresh at its step)", kinds, want)
	}
	if got[1].Hyper.Objective != h.Objective {
		t.Error("an ack does not carry the last known hyperparameters")
	}
	if got[3].State != loop.Stopped {
		t.Errorf("a format-1 run ending at step 60 of 100 shows %q, want stopped", got[3].State)
	}
	// Format 2: a stop ends the replay only if no session followed it.
	hist.Final = nil
	hist.Stops = []loop.Summary{{Steps: 70}}
	hist.stopped = true
	got = Snapshots(hist)
	if last := got[len(got)-1]; last.Kind != loop.KindFinal || last.State != loop.Stopped || last.Step != 70 {
		t.Errorf("stopped run ends with %v %s at %d, want final stopped at 70", last.Kind, last.State, last.Step)
	}
	hist.stopped = false
	if last := Snapshots(hist)[len(got)-2]; last.Kind == loop.KindFinal {
		t.Error("a stop followed by a new session ends the replay")
	}
}

// A replay or a resume recomputes the engine's own controls
// (finetune.adapt) rather than sending them: Replayable leaves them out.
func TestReplayableSkipsAuto(t *testing.T) {
	h := &History{Controls: []loop.Ack{
		{Control: loop.Control{Op: loop.OpSet, Key: "s", Value: "3"}, Step: 10},
		{Control: loop.Control{Op: loop.OpSet, Key: "lr", Value: "0.001", Source: loop.SourceAdapt}, Step: 50},
		{Control: loop.Control{Op: loop.OpSet, Key: "refresh", Value: "5", Source: loop.SourceAdapt}, Step: 50},
	}}
	got := h.Replayable(-1, true)
	if len(got) != 1 || got[0].Key != "s" || got[0].At != 10 {
		t.Errorf("Replayable = %+v, want only the researcher's s=3 at step 10", got)
	}
}

// Each refresh, and the final summary, carries the time its event was
// written.
func TestEventTimes(t *testing.T) {
	for _, c := range []struct{ root, id string }{{filepath.Join("testdata", "v1run"), "20261123-1013-2bd9"}, {filepath.Join("..", "..", "viz", "testdata", "run"), "20261123-1200-819c"}} {
		r, h := open(t, c.root, c.id)
		evs, _, err := r.Events()
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		for _, ev := range evs {
			want, err := time.Parse(time.RFC3339Nano, ev.Time)
			if err != nil {
				t.Fatal(err)
			}
			switch ev.Kind {
			case KindRefresh:
				if got := h.Refreshes[i].Time; !got.Equal(want) || got.IsZero() {
					t.Errorf("refresh %d at %v, event says %v", i, got, want)
				}
				i++
			case KindFinal:
				if !h.FinalTime.Equal(want) {
					t.Errorf("final at %v, event says %v", h.FinalTime, want)
				}
			}
		}
		if i != len(h.Refreshes) || i == 0 {
			t.Errorf("%d refresh events, %d refreshes", i, len(h.Refreshes))
		}
	}
}

// A control event records who asked for it; a record written before
// sources reads adapt where it said auto and nothing otherwise, and an
// adapt control still says auto for an older selmix.
func TestControlSource(t *testing.T) {
	for _, src := range []loop.ControlSource{loop.SourceUser, loop.SourceSchedule, loop.SourceAdapt, loop.SourceReplay} {
		a := loop.Ack{Control: loop.Control{Op: loop.OpSet, Key: "lr", Value: "0.001", Source: src}, Step: 50}
		d := ControlRecord(a)
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"source":"`+string(src)+`"`) || strings.Contains(string(b), `"auto":true`) != (src == loop.SourceAdapt) {
			t.Errorf("%s: record %s", src, b)
		}
		var back ControlData
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		got, err := back.Ack()
		if err != nil || got != a {
			t.Errorf("%s: round trip %+v, %v; want %+v", src, got, err, a)
		}
	}
	for line, want := range map[string]loop.ControlSource{
		`{"op":"set","key":"lr","value":"0.001","step":50,"auto":true}`: loop.SourceAdapt,
		`{"op":"set","key":"s","value":"3","step":50}`:                  "",
	} {
		var d ControlData
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatal(err)
		}
		if a, err := d.Ack(); err != nil || a.Control.Source != want {
			t.Errorf("old record %s: source %q, %v; want %q", line, a.Control.Source, err, want)
		}
	}
}

package runstest

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"testing"

	"selmix/core/loop"
	"selmix/runs"
	"selmix/runs/record"
)

// FirstDiff says where two event lists first differ.
func FirstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("event %d:\n  got  %.200s\n  want %.200s", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("one log is a prefix of the other (%d vs %d)", len(a), len(b))
}

// Outcome is what a run's log says, without wall-clock times: every
// event but the session markers (start, stop) in order, each with the
// records of arrays.bin it refers to (where and what), and the final
// summary, and the best checkpoint (its step and content's SHA-256).
type Outcome struct {
	Events []string
	Final  loop.Summary
	Best   string
}

// ReadOutcome reads the Outcome of run id in the runs root.
func ReadOutcome(t testing.TB, root, id string) Outcome {
	t.Helper()
	r, err := runs.Open(root, id)
	if err != nil {
		t.Fatal(err)
	}
	evs, warns, err := r.Events()
	if err != nil {
		t.Fatalf("run %s: %v", id, err)
	}
	if len(warns) > 0 {
		t.Errorf("run %s: warnings after completion: %v", id, warns)
	}
	arrays, err := os.ReadFile(runs.ArraysPath(r.Dir))
	if err != nil {
		t.Fatalf("run %s: %v", id, err)
	}
	var o Outcome
	for _, ev := range evs {
		switch ev.Kind {
		case record.KindStart, record.KindStop:
			continue // session markers
		case record.KindFinal:
			o.Events = append(o.Events, fmt.Sprintf("final@%d", ev.Step))
			continue // compared below, wall time aside
		}
		data := ev.Data
		if ev.Kind == record.KindControl {
			// Who asked is no part of what happened: a replay's controls
			// say replay where the run's said user.
			var d record.ControlData
			if err := json.Unmarshal(data, &d); err != nil {
				t.Fatalf("run %s: event %d: %v", id, ev.Seq, err)
			}
			d.Source = ""
			if data, err = json.Marshal(d); err != nil {
				t.Fatal(err)
			}
		}
		line := fmt.Sprintf("%s@%d %s", ev.Kind, ev.Step, data)
		for _, ref := range ev.Arrays {
			if ref.Offset+ref.Length > int64(len(arrays)) {
				t.Fatalf("run %s: event %d refers to bytes %d+%d of a %d-byte arrays.bin", id, ev.Seq, ref.Offset, ref.Length, len(arrays))
			}
			line += fmt.Sprintf(" [%d+%d %x]", ref.Offset, ref.Length, sha256.Sum256(arrays[ref.Offset:ref.Offset+ref.Length]))
		}
		o.Events = append(o.Events, line)
	}
	h, err := record.Load(r)
	if err != nil {
		t.Fatalf("run %s: %v", id, err)
	}
	if h.Final == nil {
		t.Fatalf("run %s has no final summary", id)
	}
	o.Final = *h.Final
	o.Final.Seconds = 0
	// A fork that never beats the best it inherited keeps no best file of
	// its own: "none", compared like any other.
	o.Best = "none"
	step, b, err := r.BestCheckpoint()
	switch {
	case err == nil:
		o.Best = fmt.Sprintf("best-%d %x", step, sha256.Sum256(b))
	case !errors.Is(err, runs.ErrNoBest):
		t.Fatalf("run %s: %v", id, err)
	}
	return o
}

// SameOutcome fails t unless got logged and concluded exactly what want
// did; what names got in the messages.
func SameOutcome(t testing.TB, what string, got, want Outcome) {
	t.Helper()
	if !reflect.DeepEqual(got.Events, want.Events) {
		t.Errorf("%s: event log differs from the uninterrupted run (%d vs %d events); first difference: %s", what, len(got.Events), len(want.Events), FirstDiff(got.Events, want.Events))
	}
	if !reflect.DeepEqual(got.Final, want.Final) {
		t.Errorf("%s: final summary differs from the uninterrupted run\n got %+v\nwant %+v", what, got.Final, want.Final)
	}
	if got.Best != want.Best {
		t.Errorf("%s: best checkpoint differs from the uninterrupted run: got %s, want %s", what, got.Best, want.Best)
	}
}

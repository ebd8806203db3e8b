package record

import (
	"testing"

	"selmix/core/train"
	"selmix/runs"
)

// A log's payloads are decoded by kind: a known kind with a bad payload is
// an error, an unknown kind is an error, and nothing panics.
func TestHistoryAdd(t *testing.T) {
	var h History
	for _, c := range []struct {
		kind, data string
		ok         bool
	}{
		{KindStart, `{"step":0,"total":10,"k":3,"train_counts":[5,2,1]}`, true},
		{KindRefresh, `{"step":5,"total":10,"state":"running","hyper":{"S":10},"stats":{"Step":5,"Psi":0.5}}`, true},
		{KindControl, `{"Control":{"Op":4,"Key":"s","Value":"3"},"Step":7}`, true},
		{KindFinal, `{"Steps":10}`, true},
		{KindError, `{"error":"boom"}`, true},
		{KindRefresh, `{"step":"five"}`, false},
		{"mystery", `{}`, false},
	} {
		err := h.add(runs.Event{Kind: c.kind, Data: []byte(c.data)})
		if (err == nil) != c.ok {
			t.Errorf("%s %s: err %v, want ok=%v", c.kind, c.data, err, c.ok)
		}
	}
	if len(h.Starts) != 1 || h.Starts[0].TrainCounts[1] != 2 || len(h.Refreshes) != 1 || h.Refreshes[0].Stats.Psi != 0.5 ||
		len(h.Controls) != 1 || h.Controls[0].Control.Op != train.OpSet || h.Final == nil || h.Final.Steps != 10 || h.Errors[0].Err != "boom" {
		t.Errorf("decoded history wrong: %+v", h)
	}
	// Replayable keeps accepted sets (and stops on request) after a step,
	// pinned to the step they took effect.
	h.Controls = append(h.Controls,
		train.Ack{Control: train.Control{Op: train.OpPause}, Step: 8},
		train.Ack{Control: train.Control{Op: train.OpSet, Key: "lr", Value: "x"}, Step: 8, Err: "bad"},
		train.Ack{Control: train.Control{Op: train.OpStop}, Step: 9})
	got := h.Replayable(6, true)
	if len(got) != 2 || got[0].Key != "s" || got[0].At != 7 || got[1].Op != train.OpStop || got[1].At != 9 {
		t.Errorf("Replayable(6, true) = %+v, want set s at 7 and stop at 9", got)
	}
	if got := h.Replayable(7, false); len(got) != 0 {
		t.Errorf("Replayable(7, false) = %+v, want none", got)
	}
}

func FuzzHistoryAdd(f *testing.F) {
	for _, k := range []string{KindStart, KindRefresh, KindControl, KindFinal, KindError} {
		f.Add(k, []byte(`{}`))
	}
	f.Add(KindRefresh, []byte(`{"stats":{"G":[1,2],"P":null,"Report":{"Recall":[0.5]}}}`))
	f.Fuzz(func(t *testing.T, kind string, data []byte) {
		var h History
		h.add(runs.Event{Kind: kind, Data: data}) // must not panic
	})
}

package main

// End-to-end tests of the binary that take minutes (sweeps, a Slurm
// cluster) live here rather than in internal/cli, so that they have their
// own package time budget and run beside the cli package's tests.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"selmix/cmd/selmix/internal/selmixtest"
	"selmix/core/train"
	"selmix/runs"
	"selmix/runs/record"
)

func TestMain(m *testing.M) { selmixtest.Main(m) }

// outcome is what a run's log says, without wall-clock times: every event
// but the session markers (start, stop) in order, and the final summary.
type outcome struct {
	events []string
	final  train.Summary
}

func readOutcome(t *testing.T, r *runs.Run) outcome {
	t.Helper()
	evs, warns, err := r.Events()
	if err != nil {
		t.Fatalf("run %s: %v", r.Meta.ID, err)
	}
	if len(warns) > 0 {
		t.Errorf("run %s: warnings after completion: %v", r.Meta.ID, warns)
	}
	var o outcome
	for _, ev := range evs {
		switch ev.Kind {
		case record.KindStart, record.KindStop:
			continue
		case record.KindFinal:
			if err := json.Unmarshal(ev.Data, &o.final); err != nil {
				t.Fatal(err)
			}
			o.final.Seconds = 0
			o.events = append(o.events, fmt.Sprintf("final@%d", ev.Step))
			continue
		}
		o.events = append(o.events, fmt.Sprintf("%s@%d %s", ev.Kind, ev.Step, ev.Data))
	}
	return o
}

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

package main

// End-to-end tests of the binary that take minutes (sweeps, a Slurm
// cluster) live here rather than in internal/cli, so that they have their
// own package time budget and run beside the cli package's tests.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"

	"selmix/cmd/selmix/internal/selmixtest"
	"selmix/core/train"
	"selmix/runs"
	"selmix/runs/record"
)

func TestMain(m *testing.M) {
	code := m.Run()
	selmixtest.Cleanup()
	os.Exit(code)
}

func selmixBinary(t *testing.T) string { return selmixtest.Binary(t) }

func runSelmix(t *testing.T, args ...string) string {
	t.Helper()
	out, code := selmixCode(t, os.Environ(), args...)
	if code != 0 {
		t.Fatalf("selmix %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

var runIDRe = regexp.MustCompile(`(?m)^run (\d{8}-\d{4}-[0-9a-f]+) \(`)

// shortRoot is a temp dir with a short path (a run's control socket path
// is limited).
func shortRoot(t *testing.T) string {
	dir, err := os.MkdirTemp("", "sw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

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

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("event %d:\n  got  %.200s\n  want %.200s", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("one log is a prefix of the other (%d vs %d)", len(a), len(b))
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

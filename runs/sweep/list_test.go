package sweep_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"selmix/core/search"
	"selmix/runs/sweep"
	"selmix/runs/sweep/sweeptest"
)

// WriteList has a line per sweep with its members' states.
func TestWriteList(t *testing.T) {
	s := sweeptest.New(t, sweeptest.SmallSpec, search.ExecLocal)
	var b bytes.Buffer
	if err := sweep.WriteList(context.Background(), &b, s.Root, nil); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "SWEEP EXECUTOR MEMBERS FINISHED RUNNING PENDING FAILED CREATED" {
		t.Fatalf("list:\n%s", b.String())
	}
	if got, want := strings.Fields(lines[1])[:7], []string{s.ID, "local", "6", "0", "0", "6", "0"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("row %q, want %q", got, want)
	}
	b.Reset()
	if err := sweep.WriteList(context.Background(), &b, t.TempDir(), nil); err != nil || !strings.HasPrefix(b.String(), "no sweeps in ") {
		t.Errorf("empty root: %q %v", b.String(), err)
	}
}

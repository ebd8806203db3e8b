package sweep_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"selmix/core/search"
	"selmix/runs/sweep"
	"selmix/runs/sweep/sweeptest"
)

func TestSpecExecutor(t *testing.T) {
	spec, err := search.Parse([]byte(sweeptest.SmallSpec), "spec.toml")
	if err != nil {
		t.Fatal(err)
	}
	if got := spec.Executor(); got != search.ExecLocal {
		t.Errorf("without [slurm]: %q, want local", got)
	}
	spec.Slurm = &search.Slurm{}
	if got := spec.Executor(); got != search.ExecSlurm {
		t.Errorf("with [slurm]: %q, want slurm", got)
	}
}

// A sweep none of whose members ran resumes them all; Describe names
// each with its state.
func TestToResume(t *testing.T) {
	s := sweeptest.New(t, sweeptest.SmallSpec, search.ExecLocal)
	todo, st, err := s.ToResume(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(todo) != 6 || todo[0] != 0 || todo[5] != 5 {
		t.Fatalf("ToResume: %v, want every member", todo)
	}
	want := "0 (" + st.Members[0].StateText() + "), 4 (" + st.Members[4].StateText() + ")"
	if got := st.Describe([]int{0, 4}); got != want || st.Members[0].StateText() == "" {
		t.Errorf("Describe: %q, want %q", got, want)
	}
}

// Watch writes the table once without a period; with one, under a line
// naming the sweep, and it stops when nothing runs or waits (none of
// these members will start: no executor holds the sweep).
func TestWatch(t *testing.T) {
	s := sweeptest.New(t, sweeptest.SmallSpec, search.ExecLocal)
	var once bytes.Buffer
	if err := sweep.NewReader(s, nil).Watch(context.Background(), &once, 0, false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(once.String(), "sweep "+s.ID+" (") || !strings.Contains(once.String(), "6 members: 0 finished, 0 running, 6 pending, 0 failed\n") {
		t.Errorf("once:\n%s", once.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b bytes.Buffer
	if err := sweep.NewReader(s, nil).Watch(ctx, &b, time.Hour, true); err != nil || ctx.Err() != nil {
		t.Fatalf("Watch: %v, context %v", err, ctx.Err())
	}
	head, table, ok := strings.Cut(b.String(), "\n")
	if !ok || !strings.HasPrefix(head, "\x1b[H\x1b[2Jsweep "+s.ID+" (local) at ") || table != once.String() {
		t.Errorf("watched:\n%q", b.String())
	}
}

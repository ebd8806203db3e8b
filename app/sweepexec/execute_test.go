package sweepexec

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"selmix/core/search"
	"selmix/runs/sweep/sweeptest"
)

// DryRun lists the members and the command each would run, and starts
// and writes nothing.
func TestDryRun(t *testing.T) {
	s := sweeptest.New(t, sweeptest.SmallSpec, search.ExecLocal)
	var b bytes.Buffer
	if err := DryRun(s, Execution{Executor: search.ExecLocal, Members: []int{1, 4}, Binary: "/bin/selmix", Parallel: 2, Threads: 3, Out: &b}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"sweep " + s.ID + " (dry run: nothing written, nothing started): 2 members, runs root " + s.Root + "\n",
		"    1  policy=selmix seed=2                      --set finetune.steps=100 --set finetune.policy=\"selmix\" --set seed=2 --set name=\"" + s.ID + "-1\"\n",
		"    4  policy=uniform seed=2 ",
		"\nwould run 2 at a time, each: OPENBLAS_NUM_THREADS=3 GOMAXPROCS=3 /bin/selmix sweep member " + s.Dir + " INDEX\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	if err := DryRun(s, Execution{Executor: search.ExecSlurm, Members: []int{0, 2, 3}, Binary: "/bin/selmix", Out: &b}); err != nil {
		t.Fatal(err)
	}
	if want := "sbatch --parsable --array=0,2-3 " + s.ScriptPath() + "\n\n#!/bin/bash\n"; !strings.Contains(b.String(), want) {
		t.Errorf("slurm dry run lacks %q:\n%s", want, b.String())
	}
	s.Dir += " x" // a folder #SBATCH lines cannot carry
	err := DryRun(s, Execution{Executor: search.ExecSlurm, Members: []int{0}, Binary: "/bin/selmix", Out: &b})
	if se := (*ScriptError)(nil); !errors.As(err, &se) || !strings.Contains(err.Error(), "has white space") {
		t.Errorf("dry run of an unscriptable sweep: %v, want a *ScriptError", err)
	}
}

// Execute runs every member locally and says how they ended; members
// that fail make it an error naming how many.
func TestExecuteLocal(t *testing.T) {
	for _, c := range []struct{ bin, wantErr, wantLine string }{
		{"true", "", ": 6 finished, 0 stopped, 0 failed, 0 not started ("},
		{"false", "6 of 6 members did not finish; selmix sweep resume ", ": 0 finished, 0 stopped, 6 failed, 0 not started ("},
	} {
		bin, err := exec.LookPath(c.bin)
		if err != nil {
			t.Skip("no " + c.bin)
		}
		s := sweeptest.New(t, sweeptest.SmallSpec, search.ExecLocal)
		var b bytes.Buffer
		err = Execute(context.Background(), s, Execution{Executor: search.ExecLocal, Members: s.AllMembers(), Binary: bin, Parallel: 3, Threads: 1, Out: &b})
		if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), c.wantErr)) {
			t.Errorf("%s: error %v, want %q", c.bin, err, c.wantErr)
		}
		for _, want := range []string{"local: 6 members, 3 at a time, 1 thread(s) each (OPENBLAS_NUM_THREADS=1 GOMAXPROCS=1); logs in ", "sweep " + s.ID + c.wantLine} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("%s: output lacks %q:\n%s", c.bin, want, b.String())
			}
		}
	}
}

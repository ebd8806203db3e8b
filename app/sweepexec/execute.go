// Package sweepexec runs a sweep's members: as processes here, several
// at a time and placed on GPUs (RunLocal), or as a Slurm array job
// (Execute submits it through Commands, the Slurm command-line tools).
// The sweep itself, its folder, its status and what to resume are
// runs/sweep's.
package sweepexec

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"selmix/core/search"
	"selmix/runs/sweep"
)

// Execution says how Execute (or DryRun) runs members of a sweep.
type Execution struct {
	Executor          string    // search.ExecLocal or search.ExecSlurm
	Members           []int     // which members, in order
	Binary            string    // the selmix executable each member runs
	Parallel, Threads int       // local: as LocalOptions (0: its defaults)
	Placer            Placer    // local: the devices each member gets; nil: none
	Out               io.Writer // what starts and how it ended, a line each
}

// Interrupted is Execute's error when SIGINT or SIGTERM stopped a local
// sweep: its running members stopped cleanly, and the sweep resumes.
type Interrupted struct {
	ID     string
	Signal syscall.Signal
}

func (e *Interrupted) Error() string {
	return fmt.Sprintf("sweep %s interrupted; resumable with: selmix sweep resume %s", e.ID, e.ID)
}

// ScriptError is DryRun's error when the sweep cannot have a batch
// script (BatchScript).
type ScriptError struct{ Err error }

func (e *ScriptError) Error() string { return e.Err.Error() }
func (e *ScriptError) Unwrap() error { return e.Err }

// Execute runs e.Members of s with e.Executor: on Slurm it submits them
// as one array job and returns; locally it runs them here (RunLocal),
// passing SIGINT and SIGTERM on to them (then the error is an
// *Interrupted), and it is an error when some did not finish.
func Execute(ctx context.Context, s *sweep.Sweep, e Execution) error {
	w := e.Out
	if e.Executor == search.ExecSlurm {
		job, err := s.Submit(ctx, Commands{}, e.Binary, e.Members)
		if err != nil {
			return fmt.Errorf("%w (sweep %s is recorded in %s: selmix sweep resume %s submits it again, --executor local runs it here)", err, s.ID, s.Dir, s.ID)
		}
		fmt.Fprintf(w, "submitted Slurm job %s, array %s (%d members); task output in %s\n", job.ID, job.Array, len(e.Members), filepath.Join(s.Dir, "slurm"))
		fmt.Fprintf(w, "  selmix sweep status %s --watch\n", s.ID)
		return nil
	}
	o, stop := e.local(s, len(e.Members))
	defer stop()
	o.Members = e.Members
	start := time.Now()
	res, err := RunLocal(s, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "sweep %s: %d finished, %d stopped, %d failed, %d not started (%.1fs)\n",
		s.ID, len(res.Finished), len(res.Stopped), len(res.Failed), len(res.NotStarted), time.Since(start).Seconds())
	if res.Signal != nil {
		return &Interrupted{ID: s.ID, Signal: res.Signal.(syscall.Signal)}
	}
	if n := len(e.Members) - len(res.Finished); n > 0 {
		return fmt.Errorf("%d of %d members did not finish; selmix sweep resume %s runs them again", n, len(e.Members), s.ID)
	}
	return nil
}

// local is the local executor's options for e, with SIGINT and SIGTERM
// caught onto its Signals until stop, after a line saying how n members
// run (and one of their GPUs).
func (e Execution) local(s *sweep.Sweep, n int) (o LocalOptions, stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	o = LocalOptions{Binary: e.Binary, Parallel: e.Parallel, Threads: e.Threads, Out: e.Out, Signals: sigs, Placer: e.Placer}
	o.Defaults()
	fmt.Fprintf(e.Out, "local: %d members, %d at a time, %d thread(s) each (OPENBLAS_NUM_THREADS=%d GOMAXPROCS=%d); logs in %s\n",
		n, o.Parallel, o.Threads, o.Threads, o.Threads, filepath.Dir(s.LogPath(0)))
	if e.Placer != nil {
		fmt.Fprintf(e.Out, "local: %s\n", e.Placer.Describe())
	}
	return o, func() { signal.Stop(sigs) }
}

// drySearchSlurm writes what a search on Slurm would submit: one job of
// the batch script per member's run to its next stop.
func (e Execution) drySearchSlurm(s *sweep.Sweep) error {
	script, err := s.BatchScript(e.Binary)
	if err != nil {
		return &ScriptError{err}
	}
	fmt.Fprintf(e.Out, "\nwould write %s and, for each member's run to its next stop, run: sbatch --parsable --array=INDEX %s --stop-at STEP (this process keeping the schedule)\n\n%s", s.ScriptPath(), s.ScriptPath(), script)
	return nil
}

// DryRun writes to e.Out the members Execute would run and how: the
// batch script and its sbatch command on Slurm, the command of each
// member locally. It writes and starts nothing.
func DryRun(s *sweep.Sweep, e Execution) error {
	w := e.Out
	fmt.Fprintf(w, "sweep %s (dry run: nothing written, nothing started): %d members, runs root %s\n", s.ID, len(e.Members), s.Root)
	for _, i := range e.Members {
		fmt.Fprintf(w, "  %3d  %-40s  --set %s\n", i, s.Describe(i), strings.Join(s.Members[i].Sets, " --set "))
	}
	if e.Executor == search.ExecSlurm {
		script, err := s.BatchScript(e.Binary)
		if err != nil {
			return &ScriptError{err}
		}
		throttle := 0
		if s.Slurm != nil {
			throttle = s.Slurm.MaxParallel
		}
		fmt.Fprintf(w, "\nwould write %s and run: sbatch --parsable --array=%s %s\n\n%s", s.ScriptPath(), search.ArraySpec(e.Members, throttle), s.ScriptPath(), script)
		return nil
	}
	o, env := e.dryLocal(w)
	fmt.Fprintf(w, "\nwould run %d at a time, each: %sOPENBLAS_NUM_THREADS=%d GOMAXPROCS=%d %s sweep member %s INDEX\n", o.Parallel, env, o.Threads, o.Threads, e.Binary, s.Dir)
	return nil
}

// dryLocal is a dry run's local options, after writing the GPUs the
// members would get, with the environment a member's command line would
// show.
func (e Execution) dryLocal(w io.Writer) (LocalOptions, string) {
	o := LocalOptions{Parallel: e.Parallel, Threads: e.Threads, Placer: e.Placer}
	o.Defaults()
	env := ""
	if e.Placer != nil {
		fmt.Fprintf(w, "\nGPUs: %s\n", e.Placer.Describe())
		if e.Placer.Slots() > 0 {
			env = gpuEnvHint
		} else if v := e.Placer.Env(nil); len(v) > 0 {
			env = strings.Join(v, " ") + " "
		}
	}
	return o, env
}

// gpuEnvHint is how the dry run writes a member's CUDA_VISIBLE_DEVICES,
// which depends on the GPUs free when it starts.
const gpuEnvHint = "CUDA_VISIBLE_DEVICES=<its free GPUs> "

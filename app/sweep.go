package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"selmix/runs"
	"selmix/runs/sweep"
)

// Sweeps: what sweep, sweep resume, sweep member and bench paper do
// with runs/sweep (docs/sweeps.md).

// SweepOptions say how a sweep's members run.
type SweepOptions struct {
	// Executor is sweep.ExecLocal or sweep.ExecSlurm; "": the spec's
	// (StartSweep) or the one the sweep ran with (ResumeSweep).
	Executor string
	// Parallel and Threads are the local executor's members at once and
	// threads of each (0: sweep.LocalOptions' defaults).
	Parallel, Threads int
	// DryRun prints what would run and starts nothing.
	DryRun bool
}

// OpenSweep opens the sweep query names (an id, a unique prefix, a name
// or a sweep folder) in the runs root root (as given); one that is not
// there is bad input.
func OpenSweep(root, query string) (*sweep.Sweep, error) {
	s, err := sweep.Open(runs.Root(root), query)
	if err != nil {
		return nil, UsageError{err}
	}
	return s, nil
}

// StartSweep plans the sweep of the spec at path in the runs root root
// (as given), records it and runs every member, printing to w; with
// o.DryRun it prints what would run instead.
func StartSweep(ctx context.Context, w io.Writer, root, path string, o SweepOptions) error {
	spec, text, err := sweep.ReadSpec(path)
	if err != nil {
		return UsageError{err}
	}
	if o.Executor == "" {
		o.Executor = spec.Executor()
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	s, err := sweep.Plan(runs.Root(root), spec, o.Executor, wd)
	if err != nil {
		return UsageError{err}
	}
	if o.DryRun {
		return dryRunSweep(w, s, s.AllMembers(), o)
	}
	if err := s.Create(spec, text); err != nil {
		return err
	}
	fmt.Fprintf(w, "sweep %s: %d members in %s\n", s.ID, len(s.Members), s.Dir)
	return ExecuteSweep(ctx, w, s, s.AllMembers(), o)
}

// ResumeSweep runs again the members of sweep query of root that are
// neither finished nor running nor queued (sweep.ToResume).
func ResumeSweep(ctx context.Context, w io.Writer, root, query string, o SweepOptions) error {
	s, err := OpenSweep(root, query)
	if err != nil {
		return err
	}
	if o.Executor == "" {
		o.Executor = s.Executor
	}
	todo, st, err := s.ToResume(ctx)
	if err != nil {
		return err
	}
	if len(todo) == 0 {
		fmt.Fprintf(w, "nothing to resume: %s\n", st.Summary())
		return nil
	}
	fmt.Fprintf(w, "sweep %s: resuming %d members: %s\n", s.ID, len(todo), st.Describe(todo))
	if o.DryRun {
		return dryRunSweep(w, s, todo, o)
	}
	return ExecuteSweep(ctx, w, s, todo, o)
}

// execution is how o runs members of s with this executable.
func execution(w io.Writer, members []int, o SweepOptions) (sweep.Execution, error) {
	self, err := os.Executable()
	if err != nil {
		return sweep.Execution{}, err
	}
	return sweep.Execution{Executor: o.Executor, Members: members, Binary: self, Parallel: o.Parallel, Threads: o.Threads, Out: w}, nil
}

// ExecuteSweep runs members of s with o.Executor (sweep.Execute); an
// interrupted local sweep ends with exit code 128 + the signal.
func ExecuteSweep(ctx context.Context, w io.Writer, s *sweep.Sweep, members []int, o SweepOptions) error {
	e, err := execution(w, members, o)
	if err != nil {
		return err
	}
	err = s.Execute(ctx, e)
	if ie := (*sweep.Interrupted)(nil); errors.As(err, &ie) {
		return CodeError{128 + int(ie.Signal), err}
	}
	return err
}

// dryRunSweep prints the members and what the executor would run.
func dryRunSweep(w io.Writer, s *sweep.Sweep, members []int, o SweepOptions) error {
	e, err := execution(w, members, o)
	if err != nil {
		return err
	}
	err = s.DryRun(e)
	if errors.As(err, new(*sweep.ScriptError)) {
		return UsageError{err}
	}
	return err
}

// SweepMember runs member i of sw in sw's runs root: it starts the
// member's run if there is none, resumes it if it has not finished, and
// returns at once if it has. The run serves its control socket when the
// root leaves room for its path. Every executor, and Slurm's requeues,
// run members through it (selmix sweep member).
func (s *Session) SweepMember(ctx context.Context, sw *sweep.Sweep, i int) error {
	c, err := sw.Config(i)
	if err != nil {
		return UsageError{err}
	}
	lock, err := sw.LockMember(i)
	if err != nil {
		return err
	}
	defer lock.Close()
	act, r, err := sw.Next(i)
	if err != nil {
		return err
	}
	ms := *s
	ms.Root = sw.Root
	// Viewers attach through the run's socket, when its path fits one.
	ms.Serve = checkSocketPath(sw.Root) == nil
	if !ms.Serve {
		fmt.Fprintf(s.Out, "note: runs root %s is too long for a control socket; the run is not attachable\n", sw.Root)
	}
	fmt.Fprintf(s.Out, "sweep %s member %d (%s)\n", sw.ID, i, sw.Describe(i))
	switch act {
	case sweep.Done:
		fmt.Fprintf(s.Out, "run %s has finished: nothing to do\n", r.Meta.ID)
		return nil
	case sweep.Resume:
		return ms.Resume(ctx, r.Meta.ID)
	}
	return ms.Start(ctx, c, Origin{})
}

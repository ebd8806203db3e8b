package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"selmix/app/sweepexec"
	"selmix/core/gpu"
	"selmix/core/loop"
	"selmix/core/search"
	"selmix/runs"
	"selmix/runs/record"
	"selmix/runs/sweep"
)

// Sweeps: what sweep, sweep resume, sweep member and bench paper do
// with runs/sweep (docs/sweeps.md).

// SweepOptions say how a sweep's members run.
type SweepOptions struct {
	// Executor is search.ExecLocal or search.ExecSlurm; "": the spec's
	// (StartSweep) or the one the sweep ran with (ResumeSweep).
	Executor string
	// Parallel and Threads are the local executor's members at once and
	// threads of each (0: sweepexec.LocalOptions' defaults).
	Parallel, Threads int
	// GPUs is --gpus (gpu.Auto, gpu.None or a list; "": the one the sweep
	// was started with, else auto) and GPUsPerMember --gpus-per-member
	// (0: the sweep's, else 1): the GPUs each local member gets, the GPUs
	// each Slurm task asks for.
	GPUs          string
	GPUsPerMember int
	// DryRun prints what would run and starts nothing.
	DryRun bool
	// Search is how StartSweep spends steps on the members: search.Grid
	// ("" too: every member runs to its end), search.Random (members
	// drawn, each run to its end), search.SuccessiveHalving or
	// search.PopulationBased.
	Search string
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
	spec, text, err := search.ReadSpec(path)
	if err != nil {
		return UsageError{err}
	}
	if o.Executor == "" {
		o.Executor = spec.Executor()
	}
	asha, pbt := o.Search == search.SuccessiveHalving, o.Search == search.PopulationBased
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	s, err := sweep.PlanSearch(runs.Root(root), spec, o.Executor, wd, o.Search)
	if err != nil {
		return UsageError{err}
	}
	switch {
	case asha:
		if s.ASHA, err = search.PlanASHA(spec, s.Members); err != nil {
			return UsageError{err}
		}
	case pbt:
		if s.PBT, err = search.PlanPBT(spec, s.Members); err != nil {
			return UsageError{err}
		}
	}
	if spec.ASHA != nil && !asha {
		fmt.Fprintf(w, "note: %s: [asha] is for --search asha; this sweep does not halve\n", spec.File)
	}
	if spec.Random != nil && s.Random == nil {
		fmt.Fprintf(w, "note: %s: [random] is for --search random (or asha, pbt over drawn members); this sweep is the grid\n", spec.File)
	}
	if s.Random != nil {
		fmt.Fprintf(w, "drawn: %s\n", s.Random.Describe(len(s.Members)))
	}
	if spec.PBT != nil && !pbt {
		fmt.Fprintf(w, "note: %s: [pbt] is for --search pbt; this sweep is no population\n", spec.File)
	}
	// Checked before anything is written; recorded for resume.
	pl, err := placement(ctx, s, o, true, gpu.Options)
	if err != nil {
		return err
	}
	s.GPUs, s.GPUsPerMember = o.GPUs, o.GPUsPerMember
	if o.DryRun {
		return dryRunSweep(w, s, s.AllMembers(), o, pl)
	}
	if err := s.Create(spec, text); err != nil {
		return err
	}
	fmt.Fprintf(w, "sweep %s: %d members in %s\n", s.ID, len(s.Members), s.Dir)
	return executeSweep(ctx, w, s, s.AllMembers(), o, pl)
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
	given, names := o.GPUs != "", gpu.Options
	if !given {
		o.GPUs, names.GPUs = s.GPUs, sweepGPUs
	}
	if o.GPUsPerMember == 0 {
		o.GPUsPerMember, names.Per = s.GPUsPerMember, sweepPer
	}
	pl, err := placement(ctx, s, o, given, names)
	if err != nil {
		if errors.As(err, new(UsageError)) && strings.HasPrefix(err.Error(), "sweep.json") {
			err = BadInput("%v (give %s or %s to place the members otherwise)", err, gpu.OptGPUs, gpu.OptPer)
		}
		return err
	}
	if s.ASHA != nil {
		return resumeSchedule(ctx, w, s, o, pl)
	}
	if s.PBT != nil {
		return resumePopulation(ctx, w, s, o, pl)
	}
	todo, st, err := s.ToResume(ctx, sweepexec.Commands{})
	if err != nil {
		return err
	}
	if len(todo) == 0 {
		fmt.Fprintf(w, "nothing to resume: %s\n", st.Summary())
		return nil
	}
	fmt.Fprintf(w, "sweep %s: resuming %d members: %s\n", s.ID, len(todo), st.Describe(todo))
	if o.DryRun {
		return dryRunSweep(w, s, todo, o, pl)
	}
	return executeSweep(ctx, w, s, todo, o, pl)
}

// execution is how o runs members of s with this executable, placing
// them with pl (nil: not at all).
func execution(w io.Writer, members []int, o SweepOptions, pl sweepexec.Placer) (sweepexec.Execution, error) {
	self, err := os.Executable()
	if err != nil {
		return sweepexec.Execution{}, err
	}
	return sweepexec.Execution{Executor: o.Executor, Members: members, Binary: self, Parallel: o.Parallel, Threads: o.Threads, Placer: pl, Out: w}, nil
}

// ExecuteSweep runs members of s with o.Executor (sweepexec.Execute), placed
// on GPUs as o says; an interrupted local sweep ends with exit code 128 +
// the signal.
func ExecuteSweep(ctx context.Context, w io.Writer, s *sweep.Sweep, members []int, o SweepOptions) error {
	pl, err := placement(ctx, s, o, true, gpu.Options)
	if err != nil {
		return err
	}
	return executeSweep(ctx, w, s, members, o, pl)
}

func executeSweep(ctx context.Context, w io.Writer, s *sweep.Sweep, members []int, o SweepOptions, pl sweepexec.Placer) error {
	e, err := execution(w, members, o, pl)
	if err != nil {
		return err
	}
	switch {
	case s.ASHA != nil:
		err = sweepexec.ExecuteASHA(ctx, s, e)
	case s.PBT != nil:
		err = sweepexec.ExecutePBT(ctx, s, e)
	default:
		err = sweepexec.Execute(ctx, s, e)
	}
	if ie := (*sweepexec.Interrupted)(nil); errors.As(err, &ie) {
		return CodeError{128 + int(ie.Signal), err}
	}
	return err
}

// dryRunSweep prints the members and what the executor would run.
func dryRunSweep(w io.Writer, s *sweep.Sweep, members []int, o SweepOptions, pl sweepexec.Placer) error {
	e, err := execution(w, members, o, pl)
	if err != nil {
		return err
	}
	if s.ASHA != nil {
		return sweepexec.DryRunASHA(s, e)
	}
	if s.PBT != nil {
		return sweepexec.DryRunPBT(s, e)
	}
	err = sweepexec.DryRun(s, e)
	if errors.As(err, new(*sweepexec.ScriptError)) {
		return UsageError{err}
	}
	return err
}

// SweepMember runs member i of sw in sw's runs root: it starts the
// member's run if there is none, resumes it if it has not finished, and
// returns at once if it has (or, with s.StopAt, if its run stopped at or
// past that step). The run serves its control socket when the
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
	if act == sweep.Start && sw.PBT != nil {
		// A member of a population continues from another's checkpoint
		// once an exploit said so: its fork is made here, recorded in the
		// sweep's log before.
		po, err := sw.Population()
		if err != nil {
			return err
		}
		if e := po.Exploited(i); e != nil {
			sets := append(slices.Clone(e.Sets), "name="+e.Run)
			return ms.fork(ctx, e.Parent, Checkpoint{Step: e.At}, sets, loop.SourcePBT)
		}
	}
	switch act {
	case sweep.Done:
		fmt.Fprintf(s.Out, "run %s has finished: nothing to do\n", r.Meta.ID)
		return nil
	case sweep.Resume:
		if at := stoppedAt(r); s.StopAt > 0 && at >= s.StopAt {
			fmt.Fprintf(s.Out, "run %s stopped at step %d, at or past %d: nothing to do\n", r.Meta.ID, at, s.StopAt)
			return nil
		}
		return ms.Resume(ctx, r.Meta.ID)
	}
	return ms.Start(ctx, c, Origin{})
}

// stoppedAt is the step run r's last session stopped at, 0 if it did not
// stop (it crashed, or never ran).
func stoppedAt(r *runs.Run) int {
	h, err := record.Load(r)
	if err != nil || h.Stopped() == nil {
		return 0
	}
	return h.Stopped().Steps
}

// resumePopulation continues population-based sweep s where its log
// stands: the members of the generation in progress that have not
// reported, then the generations after it.
func resumePopulation(ctx context.Context, w io.Writer, s *sweep.Sweep, o SweepOptions, pl sweepexec.Placer) error {
	po, err := s.Population()
	if err != nil {
		return err
	}
	if po.Complete() {
		fmt.Fprintf(w, "nothing to resume: the population of sweep %s is complete (%d decisions)\n", s.ID, len(po.Decisions))
		return nil
	}
	fmt.Fprintf(w, "sweep %s: continuing its population at generation %d after %d decisions\n", s.ID, po.Gen(), len(po.Decisions))
	if o.DryRun {
		return dryRunSweep(w, s, s.AllMembers(), o, pl)
	}
	return executeSweep(ctx, w, s, s.AllMembers(), o, pl)
}

// resumeSchedule continues the schedule of successive-halving sweep s:
// the members in flight first, then its next decisions.
func resumeSchedule(ctx context.Context, w io.Writer, s *sweep.Sweep, o SweepOptions, pl sweepexec.Placer) error {
	sc, err := s.Schedule()
	if err != nil {
		return err
	}
	if sc.Complete() {
		fmt.Fprintf(w, "nothing to resume: the schedule of sweep %s is complete (%d decisions)\n", s.ID, len(sc.Decisions))
		return nil
	}
	var fl []string
	for _, j := range sc.InFlight() {
		fl = append(fl, fmt.Sprintf("%d (to rung %d)", j.Member, j.Rung))
	}
	if len(fl) == 0 {
		fl = []string{"none"}
	}
	fmt.Fprintf(w, "sweep %s: continuing its schedule after %d decisions; in flight: %s\n", s.ID, len(sc.Decisions), strings.Join(fl, ", "))
	if o.DryRun {
		return dryRunSweep(w, s, nil, o, pl)
	}
	return executeSweep(ctx, w, s, nil, o, pl)
}

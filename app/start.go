package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"

	"selmix/core/blas"
	"selmix/core/experiment"
	"selmix/core/local"
	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/core/train"
	"selmix/core/worker"
	"selmix/runs"
	"selmix/runs/live"
	"selmix/runs/record"
)

// Start creates a run of c in the runs root, beginning where from says,
// and fine-tunes it to its end. A run stopped early returns a
// *StoppedError.
func (s *Session) Start(ctx context.Context, c experiment.Config, from Origin) error {
	ctx, sig := withSignals(ctx)
	defer sig.stop()
	var eng *train.Engine
	var err error
	if from.State != nil {
		eng, err = s.restored(sig, c, from.State, func(err error) error { return err })
	} else {
		eng, err = s.fresh(sig, c)
	}
	if err != nil {
		return err
	}
	defer eng.Trainer().Close()
	resolved, err := c.Encode()
	if err != nil {
		return err
	}
	// A name derived from the configuration is made unique in the root
	// (min-recall-selmix, min-recall-selmix-2, …); one given is kept.
	name := c.RunName()
	if c.Name == "" {
		if name, err = freeName(s.root(), name); err != nil {
			return err
		}
	}
	meta := runs.Meta{
		Objective: string(c.Finetune.Objective), Policy: string(c.Finetune.Policy), Method: c.Finetune.Method(),
		Parent: from.Parent, ParentStep: from.Step, ParentBest: from.Best, BLAS: blas.Name, BLASThreads: blas.Threads(),
		BLASCore: blas.Core(), CPU: blas.CPU(), WorkerEnv: eng.Info().Env,
		GPUs: eng.Info().GPUs, WorldSize: eng.Info().WorldSize,
	}
	if obj, psi, step, ok := eng.Top(); ok && from.State != nil {
		// The engine state carries its run's best so far; run.json says
		// it until a refresh of this run beats it (as the summary's best).
		meta.Best, meta.BestStep, meta.BestObjective = psi, step, string(obj)
	}
	rec, err := record.New(s.root(), name, resolved, record.OptionsOf(c.Record), meta)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "run %s (%s)\n", rec.Writer().ID(), rec.Writer().Dir())
	if s.Created != nil {
		s.Created(rec.Writer().ID())
	}
	// A run started from another's checkpoint (a fork, or the replay of
	// one) leaves behind the controls that run had scheduled ahead (a
	// replay's): a fork of a replay is the fork of its original.
	eng.DropPending()
	for _, ctl := range from.Controls {
		eng.Send(ctl)
	}
	startStep := 0
	if from.State != nil {
		startStep = from.Step
	}
	return s.execute(ctx, sig, eng, rec, c, startStep, from.State != nil)
}

// fresh prepares c's trainer and a new engine over it: where a run
// starts from step 0 (Start, and Resume of a run with no valid
// checkpoint). A configuration the engine refuses is bad input.
func (s *Session) fresh(sig *signals, c experiment.Config) (*train.Engine, error) {
	tr, err := s.prepare(sig.workerCtx, c)
	if err != nil {
		return nil, sig.interrupted(err)
	}
	eng, err := train.New(c.Train(), tr)
	if err != nil {
		tr.Close()
		return nil, UsageError{err}
	}
	return eng, nil
}

// restored rebuilds the trainer checkpoint state was taken with and an
// engine that continues from it; what the checkpoint itself refuses is
// returned through where (which may say which checkpoint it was).
func (s *Session) restored(sig *signals, c experiment.Config, state []byte, where func(error) error) (*train.Engine, error) {
	ck, err := local.ParseCheckpoint(state)
	if err != nil {
		return nil, where(err)
	}
	tr, err := s.restore(sig.workerCtx, c, ck)
	if err != nil {
		return nil, sig.interrupted(err)
	}
	eng, err := train.Resume(c.Train(), tr, ck)
	if err != nil {
		tr.Close()
		return nil, where(err)
	}
	return eng, nil
}

// execute runs eng to its end while rec records it, and prints progress
// and the final table. A run stopped early returns a *StoppedError.
func (s *Session) execute(ctx context.Context, sig *signals, eng *train.Engine, rec *record.Recorder, c experiment.Config, startStep int, resumed bool) (err error) {
	rec.PinAt(s.StopAt)
	w := s.Out
	interrupted := true
	info := eng.Info()
	defer func() {
		if cerr := rec.Close(interrupted); err == nil {
			err = cerr
		}
		// The figures, once the log is closed; a failed export costs the
		// run nothing.
		if c.Record.Plots && s.Plots != nil {
			if herr := s.Plots(w, rec.Writer().Dir()); herr != nil {
				fmt.Fprintf(w, "warning: %v\n", herr)
			}
		}
	}()
	st := record.Start{Step: startStep, Total: c.Finetune.Steps, K: info.K, ClassNames: info.ClassNames, TrainCounts: info.TrainCounts, Resumed: resumed}
	if err := rec.LogStart(st); err != nil {
		return err
	}
	defer s.followWorker(eng, rec.Writer().Dir())()
	share := measureWorker(eng)
	recErr := follow(eng, rec)
	view := eng.Subscribe()
	printed := make(chan struct{})
	var viewErr error
	go func() {
		defer close(printed)
		viewErr = s.show(ctx, eng, view, ViewInfo{
			ID: rec.Writer().ID(), Name: rec.Writer().Meta().Name, Dir: rec.Writer().Dir(),
			ClassNames: info.ClassNames, TrainCounts: info.TrainCounts, Config: c,
		})
	}()
	if s.Serve {
		srv, err := live.Serve(rec.Writer().Dir(), eng)
		if err != nil {
			return err
		}
		// Runs after the engine ends: clients drain the final snapshot.
		defer srv.Close()
	}
	// A stop (selmix stop, a viewer that quits) must not wait on a worker
	// that hangs: it gets the same moment to answer as after a signal.
	go func() {
		select {
		case <-eng.Stopping():
			sig.stopWorker()
		case <-sig.workerCtx.Done():
		}
	}()
	if s.StopAt > 0 {
		// Taken at that step's boundary: before the refresh due there.
		eng.Send(loop.Control{Op: loop.OpStop, At: s.StopAt})
	}
	sum, runErr := eng.Run(ctx)
	<-printed
	if viewErr != nil {
		fmt.Fprintf(w, "workbench: %v\n", viewErr)
	}
	if ferr := <-recErr; ferr != nil {
		return fmt.Errorf("recording run %s stopped it: %w", rec.Writer().ID(), ferr)
	}
	if runErr != nil && !errors.Is(runErr, train.ErrStopped) {
		return runErr
	}
	interrupted = false
	if s.Summary != nil {
		s.Summary(w, sum, startStep)
	}
	share(w)
	return s.ended(sig, rec.Writer().ID(), rec.Writer().Dir(), c, sum, runErr)
}

// follow has rec record eng's run as its options say (its log,
// checkpoints every CheckpointEvery refreshes, its best model when Best)
// and returns where the recording ends: with nil, or the write error that
// stopped the run.
func follow(eng *train.Engine, rec *record.Recorder) <-chan error {
	stream := eng.Subscribe()
	opt := rec.Options()
	eng.SetCheckpointer(opt.CheckpointEvery, rec.Checkpointer(stream))
	if opt.Best {
		eng.KeepBest(rec.BestKeeper(stream))
	} else {
		eng.JudgeBest(false)
	}
	recErr := make(chan error, 1)
	go func() {
		// A failed write (a full disk) stops the run: what is on disk
		// stays valid, and nothing runs on unrecorded.
		recErr <- rec.Follow(context.Background(), stream, func(error) { eng.Send(loop.Control{Op: loop.OpStop}) })
	}()
	return recErr
}

// measureWorker starts measuring the worker's share of eng's run: its
// time in requests from here on (its hello, which may pre-train, came
// before) against the wall time. The returned function prints it; it
// prints nothing for the in-process trainer.
func measureWorker(eng *train.Engine) func(w io.Writer) {
	wc, ok := eng.Trainer().(*worker.Client)
	if !ok {
		return func(io.Writer) {}
	}
	wall, busy0 := time.Now(), wc.Busy()
	return func(w io.Writer) {
		d, b := time.Since(wall), wc.Busy()-busy0
		fmt.Fprintf(w, "worker: %.2fs in its requests of %.2fs wall (%.0f%%; selmix and the protocol: %.0f%%)\n", b.Seconds(), d.Seconds(), 100*b.Seconds()/d.Seconds(), 100*(d-b).Seconds()/d.Seconds())
	}
}

// show hands the run's snapshots to the viewer, or prints them as
// progress lines without one; a viewer that returns stops the run.
func (s *Session) show(ctx context.Context, eng *train.Engine, view *loop.Stream, vi ViewInfo) (err error) {
	defer func() {
		// A bug in a viewer must not take the run down unrecorded.
		if p := recover(); p != nil {
			fmt.Fprintf(s.Out, "selmix: internal error in the viewer: %v\n", p)
			eng.Send(loop.Control{Op: loop.OpStop})
		}
	}()
	if s.View == nil {
		if s.Progress != nil {
			s.Progress(context.Background(), s.Out, view, s.Quiet)
		} else {
			for _, ok := view.Next(context.Background()); ok; _, ok = view.Next(context.Background()) {
			}
		}
		return nil
	}
	err = s.View(ctx, eng, view, vi)
	// A viewer that quits early must not leave the run going unseen.
	eng.Send(loop.Control{Op: loop.OpStop})
	return err
}

// unmet is " (coverage constraint unmet on validation: 9 of 10 met)"
// for a run whose optimized objective's coverage constraint does not hold
// on validation at its end, else "".
func unmet(sum *loop.Summary) string {
	spec, ok := sum.Objective.Spec()
	if !ok || spec.Constraint == metric.NoConstraint {
		return ""
	}
	r := sum.ValAfter
	b := metric.Params{Alpha: sum.Alpha}.Bound(r.K)
	n, of := r.CoverageMet(b), r.K
	if spec.Constraint == metric.GroupCoverage {
		n, of = r.HTCoverageMet(b), 2
	}
	if n == of {
		return ""
	}
	return fmt.Sprintf(" (coverage constraint unmet on validation: %d of %d met, α/K = %s)", n, of, metric.BoundText(b))
}

// FinishedLine is the last line of a run that ran all its steps, as the
// run prints it and attach --follow repeats it: "run ID finished at step
// N: DIR", with the count of the coverage constraint where it is unmet on
// validation.
func FinishedLine(id, dir string, sum *loop.Summary) string {
	return fmt.Sprintf("run %s finished at step %d%s: %s", id, sum.Steps, unmet(sum), dir)
}

// ended says how a run that was recorded to its end finished: nil for a
// run that ran all its steps, a *StoppedError for one stopped early (nil
// when the person at the in-process workbench chose to stop), an error
// for a trainer that could not go on.
func (s *Session) ended(sig *signals, id, dir string, c experiment.Config, sum *loop.Summary, runErr error) error {
	w := s.Out
	if runErr == nil {
		fmt.Fprintln(w, FinishedLine(id, dir, sum))
		return nil
	}
	var halted *train.Halted
	errors.As(runErr, &halted)
	step := 0
	switch {
	case sum != nil:
		step = sum.Steps
	case halted != nil:
		step = halted.Step
	}
	if halted != nil && sig.workerCtx.Err() == nil {
		// Not a stop we asked for: the trainer could not go on (out of
		// memory). The run is stopped, and resumes or forks from its last
		// checkpoint.
		msg := fmt.Sprintf("run %s stopped at step %d: %v; `selmix resume %s` continues it", id, step, halted.Err, id)
		if errors.Is(runErr, worker.ErrOutOfMemory) {
			msg += fmt.Sprintf(", `selmix fork %s --set finetune.batch=%d` continues it with half the batch", id, max(1, c.Train().Batch/2))
		}
		return errors.New(msg)
	}
	if halted != nil {
		// The worker did not answer in time after the stop: the run
		// resumes from its last checkpoint, so say why none was taken.
		fmt.Fprintf(w, "%v\n", halted.Err)
	}
	if s.StopAt > 0 && halted == nil && step >= s.StopAt && sig.caught() == nil {
		fmt.Fprintf(w, "run %s stopped at step %d, as asked; resumable with: selmix resume %s\n", id, step, id)
		return nil
	}
	stop := &StoppedError{ID: id, Step: step, Code: ExitSIGTERM}
	if sg := sig.caught(); sg != nil {
		stop.Code = 128 + int(sg.(syscall.Signal))
	} else if s.View != nil {
		// The person at the in-process workbench chose to stop.
		fmt.Fprintln(w, stop.Error())
		return nil
	}
	return stop
}

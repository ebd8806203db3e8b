package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"selmix/core/data"
	"selmix/core/experiment"
	"selmix/core/model"
	"selmix/core/train"
	"selmix/runs"
	"selmix/runs/live"
	"selmix/runs/record"
)

// startOpts says how a new run begins.
type startOpts struct {
	root       string
	quiet      bool
	parent     string          // fork: the parent run's id
	parentStep int             // fork: the step forked at
	state      []byte          // fork: engine checkpoint to start from
	controls   []train.Control // replay: controls to apply at their steps
	view       Viewer          // nil: print progress lines
	created    func(id string) // called with the new run's id
	serve      bool            // serve the run's control socket (detached runs)
}

// Viewer shows a live run: it reads st until it closes (or longer, while
// the user looks at the result) and may Send controls to eng. It returns
// when the user is done; the run has ended or been asked to stop by then.
type Viewer func(ctx context.Context, eng *train.Engine, st *train.Stream, info ViewInfo) error

// ViewInfo is what a viewer knows of the run besides its snapshots.
type ViewInfo struct {
	ID, Name, Dir string
	ClassNames    []string
	TrainCounts   []int
	Config        experiment.Config
}

// afterRun hooks run once a run has ended and its log is closed (plot
// export registers here); their errors are printed, never fatal.
var afterRun []func(w io.Writer, dir string) error

// prepared is an experiment's data and pre-trained model.
type prepared struct {
	sp  *data.Split
	net *model.Net
}

func prepare(ctx context.Context, w io.Writer, c experiment.Config, quiet bool) (*prepared, error) {
	start := time.Now()
	sp, head, err := experiment.LoadData(c)
	if err != nil {
		return nil, usageError{err}
	}
	net, needsPretrain, err := experiment.LoadModel(c, sp, head)
	if err != nil {
		return nil, usageError{err}
	}
	if !quiet {
		fmt.Fprintf(w, "data: %s, K=%d, %d labeled, %d unlabeled, %d validation, %d test (%.1fs)\n",
			c.Data.Source, sp.K, sp.Labeled.N, sp.Unlabeled.N, sp.Val.N, sp.Test.N, time.Since(start).Seconds())
	}
	if needsPretrain {
		if err := pretrain(ctx, w, c, net, sp, quiet); err != nil {
			return nil, err
		}
		if err := net.SetBatch(c.Finetune.Batch); err != nil {
			return nil, err
		}
	}
	return &prepared{sp, net}, nil
}

// startRun creates a run in the store and fine-tunes it to the end.
func startRun(ctx context.Context, w io.Writer, c experiment.Config, o startOpts) error {
	ctx, cancel := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer cancel()
	tc, err := c.Train()
	if err != nil {
		return usageError{err}
	}
	var eng *train.Engine
	var sp *data.Split
	if o.state != nil {
		if sp, _, err = experiment.LoadData(c); err != nil {
			return usageError{err}
		}
		if eng, err = train.Resume(tc, sp, o.state); err != nil {
			return err
		}
	} else {
		p, err := prepare(ctx, w, c, o.quiet)
		if err != nil {
			return err
		}
		sp = p.sp
		if eng, err = train.New(tc, p.net, sp); err != nil {
			return usageError{err}
		}
	}
	resolved, err := c.Encode()
	if err != nil {
		return err
	}
	rec, err := record.New(runs.Root(o.root), c.RunName(), resolved, runs.Meta{
		Objective: c.Finetune.Objective, Policy: c.Finetune.Policy,
		Parent: o.parent, ParentStep: o.parentStep,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "run %s (%s)\n", rec.Writer().ID(), rec.Writer().Dir())
	if o.created != nil {
		o.created(rec.Writer().ID())
	}
	for _, ctl := range o.controls {
		eng.Send(ctl)
	}
	startStep := 0
	if o.state != nil {
		startStep = o.parentStep
	}
	return execute(ctx, w, o, eng, rec, sp, c, record.Start{Step: startStep, Total: tc.Steps, K: sp.K, ClassNames: sp.ClassNames, TrainCounts: sp.Labeled.Counts(sp.K), Resumed: o.state != nil})
}

// execute runs eng to its end while rec records it, and prints progress
// and the final table.
func execute(ctx context.Context, w io.Writer, o startOpts, eng *train.Engine, rec *record.Recorder, sp *data.Split, c experiment.Config, st record.Start) (err error) {
	interrupted := true
	quiet := o.quiet
	defer func() {
		if cerr := rec.Close(interrupted); err == nil {
			err = cerr
		}
		for _, f := range afterRun {
			if herr := f(w, rec.Writer().Dir()); herr != nil {
				fmt.Fprintf(w, "warning: %v\n", herr)
			}
		}
	}()
	if err := rec.LogStart(st); err != nil {
		return err
	}
	eng.SetCheckpointer(c.Finetune.CheckpointEvery, rec.Checkpointer())
	stream, view := eng.Subscribe(), eng.Subscribe()
	recErr := make(chan error, 1)
	go func() {
		// A failed write (a full disk) stops the run: what is on disk
		// stays valid, and nothing runs on unrecorded.
		recErr <- rec.Follow(context.Background(), stream, func(error) { eng.Send(train.Control{Op: train.OpStop}) })
	}()
	printed := make(chan struct{})
	var viewErr error
	go func() {
		defer close(printed)
		if o.view == nil {
			printProgress(context.Background(), w, view, quiet)
			return
		}
		viewErr = o.view(ctx, eng, view, ViewInfo{
			ID: rec.Writer().ID(), Name: rec.Writer().Meta().Name, Dir: rec.Writer().Dir(),
			ClassNames: sp.ClassNames, TrainCounts: sp.Labeled.Counts(sp.K), Config: c,
		})
		// A viewer that quits early must not leave the run going unseen.
		eng.Send(train.Control{Op: train.OpStop})
	}()
	if o.serve {
		srv, err := live.Serve(rec.Writer().Dir(), eng)
		if err != nil {
			return err
		}
		// Runs after the engine ends: clients drain the final snapshot.
		defer srv.Close()
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
	printSummary(w, sum)
	if sum != nil {
		fmt.Fprintf(w, "run %s %s at step %d: %s\n", rec.Writer().ID(), map[bool]string{true: "stopped", false: "finished"}[runErr != nil], sum.Steps, rec.Writer().Dir())
	}
	return nil
}

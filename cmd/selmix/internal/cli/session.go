package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"selmix/core/blas"
	"selmix/core/experiment"
	"selmix/core/train"
	"selmix/core/worker"
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
	parentBest bool            // fork: from the parent's best checkpoint
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

// prepare loads an experiment's data and pre-trained model (pre-training
// one first if needed), or starts its worker, and returns the trainer of a
// fresh run.
func prepare(ctx context.Context, w io.Writer, c experiment.Config, quiet bool) (train.Trainer, error) {
	start := time.Now()
	if len(c.Worker.Command) > 0 {
		wc, err := startWorker(w, c, quiet)
		if err != nil {
			return nil, err
		}
		if !quiet {
			in := wc.Info()
			fmt.Fprintf(w, "worker: %s, K=%d, d=%d, %d labeled, %d unlabeled, %d validation, %d test (%.1fs)\n",
				in.Device, in.K, in.D, in.Labeled, in.Unlabeled, in.Val, in.Test, time.Since(start).Seconds())
		}
		return wc, nil
	}
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
		fmt.Fprintf(w, "blas: %s\n", blasNote())
	}
	if needsPretrain {
		if sp.Labeled.N < c.Pretrain.Batch {
			return nil, badInput("pretrain.batch: %d is more than the %d labeled samples (set a smaller pretrain.batch, or give data.head)", c.Pretrain.Batch, sp.Labeled.N)
		}
		if net, err = pretrainCached(ctx, w, c, net, sp, quiet); err != nil {
			return nil, err
		}
		if err := net.SetBatch(c.Finetune.Batch); err != nil {
			return nil, err
		}
	}
	tr, err := train.NewLocal(net, sp, uint64(c.Seed))
	if err != nil {
		return nil, usageError{err}
	}
	return tr, nil
}

// blasNote names the BLAS the in-process trainer uses and, for the pure-Go
// one, how to get the one that is about 8× faster.
func blasNote() string {
	if blas.OpenBLAS() {
		return "OpenBLAS"
	}
	return "pure Go (about 8× slower than OpenBLAS: apt install libopenblas-dev, then make build)"
}

// restore rebuilds the trainer a checkpoint of a run of c was taken with.
func restore(w io.Writer, c experiment.Config, ck *train.Checkpoint, quiet bool) (train.Trainer, error) {
	if len(c.Worker.Command) > 0 {
		wc, err := startWorker(w, c, quiet)
		if err != nil {
			return nil, err
		}
		if err := wc.Load(ck.Trainer); err != nil {
			wc.Close()
			return nil, err
		}
		return wc, nil
	}
	sp, _, err := experiment.LoadData(c)
	if err != nil {
		return nil, usageError{err}
	}
	return train.LoadLocal(sp, ck.Trainer)
}

// startWorker starts c's worker process. Until the run exists, its stderr
// goes to w (a worker may take a while: loading data, pre-training).
func startWorker(w io.Writer, c experiment.Config, quiet bool) (*worker.Client, error) {
	wc, err := worker.Start(worker.Options{
		Command: c.Worker.Command, Dir: c.Worker.Dir, Seed: uint64(c.Seed),
		Timeout:      time.Duration(c.Worker.Timeout * float64(time.Second)),
		StartTimeout: time.Duration(c.Worker.StartTimeout * float64(time.Second)),
	})
	if err != nil {
		return nil, err
	}
	if !quiet {
		wc.SetLog(func(line string) { fmt.Fprintf(w, "worker: %s\n", line) })
	}
	return wc, nil
}

// followWorker sends a worker's stderr into the run's worker.log and to
// its viewers; the returned function closes the log.
func followWorker(eng *train.Engine, dir string) func() {
	wc, ok := eng.Trainer().(*worker.Client)
	if !ok {
		return func() {}
	}
	f, err := os.OpenFile(filepath.Join(dir, "worker.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		f = nil
	}
	wc.SetLog(func(line string) {
		if f != nil {
			fmt.Fprintln(f, line)
		}
		eng.Note(line)
	})
	return func() {
		if f != nil {
			f.Close()
		}
	}
}

// startRun creates a run in the store and fine-tunes it to the end.
func startRun(ctx context.Context, w io.Writer, c experiment.Config, o startOpts) error {
	ctx, sig := withSignals(ctx)
	defer sig.stop()
	tc := c.Train()
	var eng *train.Engine
	if o.state != nil {
		ck, err := train.ParseCheckpoint(o.state)
		if err != nil {
			return err
		}
		tr, err := restore(w, c, ck, o.quiet)
		if err != nil {
			return err
		}
		if eng, err = train.Resume(tc, tr, ck); err != nil {
			tr.Close()
			return err
		}
	} else {
		tr, err := prepare(ctx, w, c, o.quiet)
		if err != nil {
			return err
		}
		if eng, err = train.New(tc, tr); err != nil {
			tr.Close()
			return usageError{err}
		}
	}
	defer eng.Trainer().Close()
	resolved, err := c.Encode()
	if err != nil {
		return err
	}
	rec, err := record.New(runs.Root(o.root), c.RunName(), resolved, runs.Meta{
		Objective: string(c.Finetune.Objective), Policy: string(c.Finetune.Policy),
		Parent: o.parent, ParentStep: o.parentStep, ParentBest: o.parentBest,
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
	return execute(ctx, sig, w, o, eng, rec, c, startStep, o.state != nil)
}

// execute runs eng to its end while rec records it, and prints progress
// and the final table. A run stopped early returns an *interrupted.
func execute(ctx context.Context, sig *signals, w io.Writer, o startOpts, eng *train.Engine, rec *record.Recorder, c experiment.Config, startStep int, resumed bool) (err error) {
	interrupted := true
	quiet := o.quiet
	info := eng.Info()
	defer func() {
		if cerr := rec.Close(interrupted); err == nil {
			err = cerr
		}
		// The figures, once the log is closed; a failed export costs the
		// run nothing.
		if c.Record.Plots {
			if herr := autoExport(w, rec.Writer().Dir()); herr != nil {
				fmt.Fprintf(w, "warning: %v\n", herr)
			}
		}
	}()
	st := record.Start{Step: startStep, Total: c.Finetune.Steps, K: info.K, ClassNames: info.ClassNames, TrainCounts: info.TrainCounts, Resumed: resumed}
	if err := rec.LogStart(st); err != nil {
		return err
	}
	defer followWorker(eng, rec.Writer().Dir())()
	// The worker's share of the run: its time in requests from here on
	// (its hello, which may pre-train, came before) against the wall time.
	wall := time.Now()
	var busy0 time.Duration
	if wc, ok := eng.Trainer().(*worker.Client); ok {
		busy0 = wc.Busy()
	}
	stream, view := eng.Subscribe(), eng.Subscribe()
	eng.SetCheckpointer(c.Finetune.CheckpointEvery, rec.Checkpointer(stream))
	eng.KeepBest(rec.BestKeeper(stream))
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
		defer func() {
			// A bug in a viewer must not take the run down unrecorded.
			if p := recover(); p != nil {
				fmt.Fprintf(w, "selmix: internal error in the viewer: %v\n", p)
				eng.Send(train.Control{Op: train.OpStop})
			}
		}()
		if o.view == nil {
			printProgress(context.Background(), w, view, quiet)
			return
		}
		viewErr = o.view(ctx, eng, view, ViewInfo{
			ID: rec.Writer().ID(), Name: rec.Writer().Meta().Name, Dir: rec.Writer().Dir(),
			ClassNames: info.ClassNames, TrainCounts: info.TrainCounts, Config: c,
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
	printSummary(w, sum, startStep)
	if wc, ok := eng.Trainer().(*worker.Client); ok {
		d, b := time.Since(wall), wc.Busy()-busy0
		fmt.Fprintf(w, "worker: %.2fs in its requests of %.2fs wall (%.0f%%; selmix and the protocol: %.0f%%)\n", b.Seconds(), d.Seconds(), 100*b.Seconds()/d.Seconds(), 100*(d-b).Seconds()/d.Seconds())
	}
	if runErr == nil {
		fmt.Fprintf(w, "run %s finished at step %d: %s\n", rec.Writer().ID(), sum.Steps, rec.Writer().Dir())
		return nil
	}
	stop := &stoppedError{id: rec.Writer().ID(), step: sum.Steps, code: exitStopped}
	if s := sig.caught(); s != nil {
		stop.code = 128 + int(s.(syscall.Signal))
	} else if o.view != nil {
		// The person at the in-process workbench chose to stop.
		fmt.Fprintln(w, stop.Error())
		return nil
	}
	return stop
}

// exitStopped is the exit code of a run stopped by `selmix stop`: that of
// SIGTERM, which asks for the same thing.
const exitStopped = 128 + int(syscall.SIGTERM)

// stoppedError is a run that stopped before its end and can be resumed.
// Main exits with its code: 130 after SIGINT, 143 after SIGTERM or
// `selmix stop`.
type stoppedError struct {
	id   string
	step int
	code int
}

func (e *stoppedError) Error() string {
	return fmt.Sprintf("run %s stopped at step %d; resumable with: selmix resume %s", e.id, e.step, e.id)
}

// signals cancels a context on SIGINT or SIGTERM and remembers which came.
type signals struct {
	ch   chan os.Signal
	mu   sync.Mutex
	sig  os.Signal
	stop func()
}

func withSignals(parent context.Context) (context.Context, *signals) {
	ctx, cancel := context.WithCancel(parent)
	s := &signals{ch: make(chan os.Signal, 1)}
	signal.Notify(s.ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-s.ch:
			s.mu.Lock()
			s.sig = sig
			s.mu.Unlock()
			cancel()
		case <-done:
		}
	}()
	var once sync.Once
	s.stop = func() {
		once.Do(func() {
			signal.Stop(s.ch)
			close(done)
			cancel()
		})
	}
	return ctx, s
}

func (s *signals) caught() os.Signal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sig
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"selmix/core/blas"
	"selmix/core/data"
	"selmix/core/experiment"
	"selmix/core/local"
	"selmix/core/model"
	"selmix/core/safetext"
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
		wc, err := startWorker(ctx, w, c, quiet)
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
	var sp *data.Split
	var net *model.Net
	var needsPretrain bool
	err := interruptible(ctx, func() error {
		var head *data.Head
		var err error
		if sp, head, err = experiment.LoadData(c); err != nil {
			return usageError{err}
		}
		if net, needsPretrain, err = local.LoadModel(c, sp, head); err != nil {
			return usageError{err}
		}
		return nil
	})
	if err != nil {
		return nil, err
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
	tr, err := local.New(net, sp, uint64(c.Seed))
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

// interruptible runs f, which may block in a read (a FIFO named as a
// data file), until it returns or ctx ends: then it returns ctx's cause
// at once and leaves f to the process's exit.
func interruptible(ctx context.Context, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("interrupted while loading the data: %w", context.Cause(ctx))
	}
}

// restore rebuilds the trainer a checkpoint of a run of c was taken with.
func restore(ctx context.Context, w io.Writer, c experiment.Config, ck *train.Checkpoint, quiet bool) (train.Trainer, error) {
	if len(c.Worker.Command) > 0 {
		wc, err := startWorker(ctx, w, c, quiet)
		if err != nil {
			return nil, err
		}
		if err := wc.Load(ck.Trainer); err != nil {
			wc.Close()
			return nil, err
		}
		return wc, nil
	}
	var sp *data.Split
	err := interruptible(ctx, func() error {
		var err error
		if sp, _, err = experiment.LoadData(c); err != nil {
			return usageError{err}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return local.Load(sp, ck.Trainer)
}

// maxConsoleLine is the longest worker line printed here, in bytes.
const maxConsoleLine = 64 << 10

// startWorker starts c's worker process under ctx: when ctx ends, the
// worker gets a moment to answer, then is stopped (worker.Options). Until
// the run exists, its stderr goes to w as it comes (a worker may take a
// while: loading data, pre-training).
func startWorker(ctx context.Context, w io.Writer, c experiment.Config, quiet bool) (*worker.Client, error) {
	o := worker.Options{
		Command: c.Worker.Command, Dir: c.Worker.Dir, Seed: uint64(c.Seed),
		Timeout:      time.Duration(c.Worker.Timeout * float64(time.Second)),
		StartTimeout: time.Duration(c.Worker.StartTimeout * float64(time.Second)),
	}
	if !quiet {
		o.Log = func(line string) { fmt.Fprintf(w, "worker: %s\n", safetext.Console(line, maxConsoleLine)) }
	}
	wc, err := worker.Start(ctx, o)
	if errors.Is(err, worker.ErrStart) || errors.Is(err, worker.ErrBadInput) {
		return nil, usageError{err}
	}
	return wc, err
}

// followWorker sends a worker's stderr into the run's worker.log (bounded:
// runs.WorkerLog) and to its viewers; the returned function closes the log.
func followWorker(eng *train.Engine, dir string) func() {
	wc, ok := eng.Trainer().(*worker.Client)
	if !ok {
		return func() {}
	}
	l := runs.OpenWorkerLog(dir, runs.WorkerLogHead, runs.WorkerLogTail, eng.Note)
	wc.SetLog(func(line string) {
		l.Line(line)
		eng.Note(line)
	})
	return func() {
		wc.SetLog(func(string) {})
		l.Close()
	}
}

// startRun creates a run in the store and fine-tunes it to the end.
func startRun(ctx context.Context, w io.Writer, c experiment.Config, o startOpts) error {
	ctx, sig := withSignals(ctx)
	defer sig.stop()
	tc := c.Train()
	var eng *train.Engine
	if o.state != nil {
		ck, err := local.ParseCheckpoint(o.state)
		if err != nil {
			return err
		}
		tr, err := restore(sig.workerCtx, w, c, ck, o.quiet)
		if err != nil {
			return sig.interrupted(err)
		}
		if eng, err = train.Resume(tc, tr, ck); err != nil {
			tr.Close()
			return err
		}
	} else {
		tr, err := prepare(sig.workerCtx, w, c, o.quiet)
		if err != nil {
			return sig.interrupted(err)
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
		Parent: o.parent, ParentStep: o.parentStep, ParentBest: o.parentBest, BLAS: blas.Name, BLASThreads: blas.Threads(),
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
	// A stop (selmix stop, a viewer that quits) must not wait on a worker
	// that hangs: it gets the same moment to answer as after a signal.
	go func() {
		select {
		case <-eng.Stopping():
			sig.stopWorker()
		case <-sig.workerCtx.Done():
		}
	}()
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
	var halted *train.Halted
	errors.As(runErr, &halted)
	printSummary(w, sum, startStep)
	if wc, ok := eng.Trainer().(*worker.Client); ok {
		d, b := time.Since(wall), wc.Busy()-busy0
		fmt.Fprintf(w, "worker: %.2fs in its requests of %.2fs wall (%.0f%%; selmix and the protocol: %.0f%%)\n", b.Seconds(), d.Seconds(), 100*b.Seconds()/d.Seconds(), 100*(d-b).Seconds()/d.Seconds())
	}
	if runErr == nil {
		fmt.Fprintf(w, "run %s finished at step %d: %s\n", rec.Writer().ID(), sum.Steps, rec.Writer().Dir())
		return nil
	}
	id := rec.Writer().ID()
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
	stop := &stoppedError{id: id, step: step, code: exitStopped}
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
// Its workerCtx, the context of the run's worker, also ends with
// stopWorker, when the run is stopped by other means.
type signals struct {
	ch         chan os.Signal
	mu         sync.Mutex
	sig        os.Signal
	stop       func()
	workerCtx  context.Context
	stopWorker context.CancelFunc
}

func withSignals(parent context.Context) (context.Context, *signals) {
	ctx, cancel := context.WithCancel(parent)
	s := &signals{ch: make(chan os.Signal, 1)}
	s.workerCtx, s.stopWorker = context.WithCancel(ctx)
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
			s.stopWorker()
			cancel()
		})
	}
	return ctx, s
}

// interrupted is err, from the start of a run (its data loading, its
// worker's hello), with the exit code of the signal that interrupted it.
func (s *signals) interrupted(err error) error {
	sig := s.caught()
	if sig == nil || !errors.Is(err, context.Canceled) {
		return err
	}
	return codeError{128 + int(sig.(syscall.Signal)), err}
}

func (s *signals) caught() os.Signal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sig
}

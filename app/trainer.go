package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"selmix/core/blas"
	"selmix/core/data"
	"selmix/core/experiment"
	"selmix/core/local"
	"selmix/core/model"
	"selmix/core/train"
	"selmix/core/worker"
	"selmix/internal/safetext"
)

// prepare loads an experiment's data and pre-trained model (pre-training
// one first if needed), or starts its worker, and returns the trainer of a
// fresh run.
func (s *Session) prepare(ctx context.Context, c experiment.Config) (train.Trainer, error) {
	w := s.Out
	start := time.Now()
	if len(c.Worker.Command) > 0 {
		wc, err := s.startWorker(ctx, c)
		if err != nil {
			return nil, err
		}
		if !s.Quiet {
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
			return UsageError{err}
		}
		if net, needsPretrain, err = local.LoadModel(c, sp, head); err != nil {
			return UsageError{err}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !s.Quiet {
		fmt.Fprintf(w, "data: %s, K=%d, %d labeled, %d unlabeled, %d validation, %d test (%.1fs)\n",
			c.Data.Source, sp.K, sp.Labeled.N, sp.Unlabeled.N, sp.Val.N, sp.Test.N, time.Since(start).Seconds())
		fmt.Fprintf(w, "blas: %s\n", blasNote())
	}
	if needsPretrain {
		if sp.Labeled.N < c.Pretrain.Batch {
			return nil, BadInput("pretrain.batch: %d is more than the %d labeled samples (set a smaller pretrain.batch, or give data.head)", c.Pretrain.Batch, sp.Labeled.N)
		}
		if net, err = PretrainCached(ctx, w, c, net, sp, s.Quiet); err != nil {
			return nil, err
		}
		if err := net.SetBatch(c.Finetune.Batch); err != nil {
			return nil, err
		}
	}
	tr, err := local.New(net, sp, uint64(c.Seed))
	if err != nil {
		return nil, UsageError{err}
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
	if ok, err := returned(ctx, f); ok {
		return err
	}
	return fmt.Errorf("interrupted while loading the data: %w", context.Cause(ctx))
}

// returned runs f in a goroutine and waits for it or for ctx to end:
// true and f's error if f returned first, false if ctx ended (f is left
// to the process's exit).
func returned(ctx context.Context, f func() error) (bool, error) {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return true, err
	case <-ctx.Done():
		return false, nil
	}
}

// restore rebuilds the trainer a checkpoint of a run of c was taken with.
func (s *Session) restore(ctx context.Context, c experiment.Config, ck *train.Checkpoint) (train.Trainer, error) {
	if len(c.Worker.Command) > 0 {
		wc, err := s.startWorker(ctx, c)
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
			return UsageError{err}
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
// the run exists, its stderr goes to Out as it comes (a worker may take a
// while: loading data, pre-training).
func (s *Session) startWorker(ctx context.Context, c experiment.Config) (*worker.Client, error) {
	o := worker.Options{
		Command: c.Worker.Command, Dir: c.Worker.Dir, Seed: uint64(c.Seed),
		Timeout:      time.Duration(c.Worker.Timeout * float64(time.Second)),
		StartTimeout: time.Duration(c.Worker.StartTimeout * float64(time.Second)),
		Env:          s.WorkerEnv,
	}
	if !s.Quiet {
		w := s.Out
		o.Echo = func(line string) { fmt.Fprintf(w, "worker: %s\n", safetext.Console(line, maxConsoleLine)) }
	}
	wc, err := worker.Start(ctx, o)
	if errors.Is(err, worker.ErrStart) || errors.Is(err, worker.ErrBadInput) {
		return nil, UsageError{err}
	}
	return wc, err
}

// followWorker sends a worker's stderr into the run's worker log
// (WorkerLog) and to its viewers; the returned function closes the log.
func (s *Session) followWorker(eng *train.Engine, dir string) func() {
	wc, ok := eng.Trainer().(*worker.Client)
	if !ok {
		return func() {}
	}
	line, closeLog := func(string) {}, func() {}
	if s.WorkerLog != nil {
		line, closeLog = s.WorkerLog(dir, eng.Note)
	}
	wc.SetLog(func(l string) {
		line(l)
		eng.Note(l)
	})
	return func() {
		wc.SetLog(func(string) {})
		closeLog()
	}
}

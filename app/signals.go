package app

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

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
	return CodeError{128 + int(sig.(syscall.Signal)), err}
}

func (s *signals) caught() os.Signal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sig
}

// SignalContext is a context that ends on SIGINT or SIGTERM, for commands
// that wait or work without a run of their own (stop, pretrain, export):
// code is then the exit code of the signal that came (130, 143), 0 before
// one came; stop releases the signals.
func SignalContext(parent context.Context) (ctx context.Context, code func() int, stop func()) {
	ctx, s := withSignals(parent)
	code = func() int {
		if sig, ok := s.caught().(syscall.Signal); ok {
			return 128 + int(sig)
		}
		return 0
	}
	return ctx, code, s.stop
}

// Interrupted is err, or when err is not nil and code (of SignalContext)
// says a signal came, a CodeError with the signal's exit code and the
// message what.
func Interrupted(err error, code func() int, what string) error {
	if c := code(); c != 0 && err != nil {
		return CodeError{c, errors.New(what)}
	}
	return err
}

// UntilSignal runs f until it returns, or until SIGINT or SIGTERM comes:
// then it returns at once a CodeError with the signal's exit code (130,
// 143) and the message what, leaving f to the process's exit, for work
// that cannot be interrupted part way (drawing a figure). Files written
// through atomicfile are each whole or absent.
func UntilSignal(ctx context.Context, what string, f func() error) error {
	ctx, code, stop := SignalContext(ctx)
	defer stop()
	if ok, err := returned(ctx, f); ok {
		return err
	}
	return Interrupted(ctx.Err(), code, what)
}

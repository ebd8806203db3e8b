package app

import (
	"errors"
	"fmt"
	"syscall"

	"selmix/core/worker"
	"selmix/internal/boundedfile"
	"selmix/runs"
)

// Exit codes of the selmix process.
const (
	ExitOK       = 0
	ExitFailure  = 1                          // the command failed at run time
	ExitBadInput = 2                          // bad flags, files, configuration, or a damaged run
	ExitInexact  = 3                          // a replay differs where its arithmetic could not be the original's (another BLAS kernel, threads, worker)
	ExitSIGINT   = 128 + int(syscall.SIGINT)  // 130: interrupted by SIGINT (resumable)
	ExitSIGTERM  = 128 + int(syscall.SIGTERM) // 143: stopped by SIGTERM or `selmix stop` (resumable)
)

// UsageError marks bad input (flags, files, configuration): exit code 2.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// ExitCode is ExitBadInput.
func (e UsageError) ExitCode() int { return ExitBadInput }

// BadInput is a UsageError with a formatted message.
func BadInput(format string, args ...any) error {
	return UsageError{fmt.Errorf(format, args...)}
}

// usage wraps a non-nil err as a UsageError.
func usage(err error) error {
	if err == nil {
		return nil
	}
	return UsageError{err}
}

// CodeError ends the command with a given exit code (e.g. 130 or 143 for
// a sweep whose members were interrupted).
type CodeError struct {
	Code int
	Err  error
}

func (e CodeError) Error() string { return e.Err.Error() }
func (e CodeError) Unwrap() error { return e.Err }

// ExitCode is e.Code.
func (e CodeError) ExitCode() int { return e.Code }

// StoppedError is a run that stopped before its end and can be resumed:
// its Code is 130 after SIGINT, 143 after SIGTERM or `selmix stop`.
type StoppedError struct {
	ID   string
	Step int
	Code int
}

// ExitCode is e.Code.
func (e *StoppedError) ExitCode() int { return e.Code }

func (e *StoppedError) Error() string {
	return fmt.Sprintf("run %s stopped at step %d; resumable with: selmix resume %s", e.ID, e.Step, e.ID)
}

// An exitCoder is an error that says which code the process exits with;
// the command line's own error types are classified through it too.
type exitCoder interface {
	error
	ExitCode() int
}

// ExitCode classifies err into the process's exit code: 0 for nil; the
// code of the outermost error in its chain that has an ExitCode method
// (a StoppedError's or CodeError's own, 2 for a UsageError); 2 for a file
// over its bound, data that would not fit in memory, or a damaged run; 1 for anything else.
func ExitCode(err error) int {
	var ec exitCoder
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ec):
		return ec.ExitCode()
	case errors.As(err, new(*boundedfile.Error)) || errors.Is(err, boundedfile.ErrNoMemory) || errors.Is(err, runs.ErrDamaged) || errors.Is(err, worker.ErrBadState):
		return ExitBadInput
	}
	return ExitFailure
}

package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"selmix/internal/boundedfile"
	"selmix/runs"
)

// cliError stands for an error type of the command line's own that
// says its exit code.
type cliError struct{ code int }

func (e cliError) Error() string { return "cli" }
func (e cliError) ExitCode() int { return e.code }

func TestExitCode(t *testing.T) {
	t.Parallel()
	plain := errors.New("disk full")
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, 0},
		{"runtime failure", plain, 1},
		{"wrapped runtime failure", fmt.Errorf("run x: %w", plain), 1},
		{"cancelled without a signal", context.Canceled, 1},
		{"bad input", BadInput("--at %q: want a step", "x"), 2},
		{"usage error", UsageError{plain}, 2},
		{"wrapped usage error", fmt.Errorf("fork: %w", UsageError{plain}), 2},
		{"file over its bound", &boundedfile.Error{Path: "run.json", Size: 1 << 40, Err: boundedfile.ErrTooLarge}, 2},
		{"wrapped file over its bound", fmt.Errorf("open: %w", &boundedfile.Error{Path: "p", Mode: fs.ModeNamedPipe, Err: boundedfile.ErrNotRegular}), 2},
		{"damaged run", fmt.Errorf("run x: %w", runs.ErrDamaged), 2},
		{"busy run (rm, a second resume: they exited 1)", fmt.Errorf("cannot remove live run: %w", &runs.BusyError{ID: "x", Pid: 7}), 2},
		{"data larger than memory", fmt.Errorf("x.npz: %w", &boundedfile.MemoryError{What: "a", Need: 9, Have: 1}), 2},
		{"interrupted by SIGINT", CodeError{ExitSIGINT, context.Canceled}, 130},
		{"interrupted by SIGTERM", CodeError{ExitSIGTERM, context.Canceled}, 143},
		{"stopped by SIGINT", &StoppedError{ID: "r", Step: 40, Code: ExitSIGINT}, 130},
		{"stopped by selmix stop", fmt.Errorf("sweep: %w", &StoppedError{ID: "r", Step: 40, Code: ExitSIGTERM}), 143},
		{"the outermost code wins", CodeError{ExitSIGINT, UsageError{plain}}, 130},
		{"an error type of the command line", fmt.Errorf("x: %w", cliError{7}), 7},
	} {
		if got := ExitCode(tc.err); got != tc.want {
			t.Errorf("%s: ExitCode(%v) = %d, want %d", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestStoppedErrorSaysHowToResume(t *testing.T) {
	t.Parallel()
	got := (&StoppedError{ID: "20260101-0000-abcd", Step: 120, Code: ExitSIGTERM}).Error()
	want := "run 20260101-0000-abcd stopped at step 120; resumable with: selmix resume 20260101-0000-abcd"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestParseAt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want Checkpoint
		code int
	}{
		{"", Latest, 0},
		{"best", Checkpoint{Best: true}, 0},
		{"0", Checkpoint{Step: 0}, 0},
		{"250", Checkpoint{Step: 250}, 0},
		{"-1", Checkpoint{}, 2},
		{"latest", Checkpoint{}, 2},
	} {
		got, err := ParseAt("--at", tc.in)
		if ExitCode(err) != tc.code || (err == nil && got != tc.want) {
			t.Errorf("ParseAt(%q) = %+v, %v (exit %d); want %+v, exit %d", tc.in, got, err, ExitCode(err), tc.want, tc.code)
		}
	}
}

// Package lifecycle tests a run's life end to end on the real binary:
// run, stop, interrupt and resume (to exactly the uninterrupted result),
// fork, replay, export-head, the best checkpoint, damage, signals while a
// worker hangs, detached runs and attaching to them. They take minutes,
// so they have a test package of their own, which go test runs beside the
// cli package's. What app's lifecycle tests drive in process (resume,
// fork, replay, adapt replays, export-head, a damaged checkpoint passed
// over, the best checkpoint) is tested here only where the process
// matters: signals, sockets, FIFOs, limits, BLAS threads, a full disk.
package lifecycle

import (
	"bytes"

	"selmix/cmd/selmix/internal/cli"
)

// runCLI runs the command line in this process, for what fails before a
// run trains (exit codes and messages).
func runCLI(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = cli.Main(args, &o, &e)
	return code, o.String(), e.String()
}

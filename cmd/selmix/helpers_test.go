package main

// End-to-end tests of the binary that take minutes (sweeps, a Slurm
// cluster, the paper suite) live here rather than in internal/cli, so
// that they have their own package time budget and run beside the cli
// and lifecycle packages' tests.

import (
	"bytes"
	"os"
	"sync"
	"testing"

	"selmix/cmd/selmix/internal/selmixtest"
	"selmix/core/worker/workertest"
)

// The test binary doubles as a fake worker (workertest.Serve) for the
// members of the GPU sweep tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv(workertest.Env); mode != "" {
		os.Exit(workertest.Serve(mode))
	}
	selmixtest.Main(m)
}

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

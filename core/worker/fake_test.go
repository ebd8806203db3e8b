package worker_test

import (
	"context"
	"os"
	"testing"
	"time"

	"selmix/core/worker"
	"selmix/core/worker/workertest"
)

// The test binary doubles as a fake worker (workertest.Serve), or as one
// that replays the corpus's replies (serveGolden).
func TestMain(m *testing.M) {
	if mode := os.Getenv(workertest.Env); mode != "" {
		os.Exit(workertest.Serve(mode))
	}
	if spec := os.Getenv(goldenEnv); spec != "" {
		os.Exit(serveGolden(spec))
	}
	os.Exit(m.Run())
}

// fake starts this test binary as a worker in mode.
func fake(t *testing.T, mode string, seed uint64, timeout time.Duration) (*worker.Client, error) {
	t.Helper()
	return fakeCtx(t, context.Background(), mode, worker.Options{Seed: seed, Timeout: timeout})
}

// fakeCtx starts this test binary as a worker in mode under ctx, with o
// but for its command.
func fakeCtx(t *testing.T, ctx context.Context, mode string, o worker.Options) (*worker.Client, error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(workertest.Env, mode)
	o.Command = []string{self}
	return worker.Start(ctx, o)
}

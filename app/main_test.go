package app

import (
	"os"
	"testing"

	"selmix/core/worker/workertest"
)

// The test binary doubles as a fake worker (workertest.Serve) for the
// sessions its tests start.
func TestMain(m *testing.M) {
	if mode := os.Getenv(workertest.Env); mode != "" {
		os.Exit(workertest.Serve(mode))
	}
	os.Exit(m.Run())
}

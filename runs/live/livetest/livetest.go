// Package livetest helps tests that serve a run's control socket.
package livetest

import (
	"os"
	"testing"
)

// ShortDir is a temp folder, removed when the test ends, whose paths fit a
// unix socket's (about 107 bytes; t.TempDir's can pass it).
func ShortDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

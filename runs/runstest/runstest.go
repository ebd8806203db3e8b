// Package runstest helps tests that work on recorded runs.
package runstest

import (
	"os"
	"path/filepath"
	"testing"

	"selmix/runs"
)

// Copy copies the record of run directory src (runs.RecordFiles) into dst,
// passing each file through edit first if edit is not nil: how a test makes
// a damaged copy of a good run (edit returning nil leaves the file out).
func Copy(t testing.TB, src, dst string, edit func(name string, b []byte) []byte) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range runs.RecordFiles() {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			if b = edit(name, b); b == nil {
				continue // the file is left out
			}
		}
		if err := os.WriteFile(filepath.Join(dst, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

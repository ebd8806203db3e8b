// Package selmixtest builds the real selmix binary for the tests that run
// it as a person or a script would (the cli package's and the sweep
// end-to-end tests).
package selmixtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"selmix/core/blas"
)

var (
	once sync.Once
	path string
	err  error
)

// Binary builds cmd/selmix once per test process, with the BLAS of the
// test binary (OpenBLAS makes it about 8× faster), and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		var dir string
		if dir, err = os.MkdirTemp("", "selmix-bin-"); err != nil {
			return
		}
		path = filepath.Join(dir, "selmix")
		tags := ""
		if blas.OpenBLAS() {
			tags = "openblas"
		}
		if out, berr := exec.Command("go", "build", "-tags", tags, "-o", path, "selmix/cmd/selmix").CombinedOutput(); berr != nil {
			err = fmt.Errorf("go build: %v\n%s", berr, out)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// Cleanup removes the binary; call it from TestMain after m.Run.
func Cleanup() {
	if path != "" {
		os.RemoveAll(filepath.Dir(path))
	}
}

// Package selmixtest builds the real selmix binary and runs it for the
// tests that use it as a person or a script would (the cli package's and
// the sweep end-to-end tests), with the helpers both packages share.
package selmixtest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
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

// Main is the TestMain of a package that runs the binary: it runs the
// tests, then removes the binary.
func Main(m *testing.M) {
	code := m.Run()
	if path != "" {
		os.RemoveAll(filepath.Dir(path))
	}
	os.Exit(code)
}

// RunIDRe finds the id in the line run and fork print as a run starts.
var RunIDRe = regexp.MustCompile(`(?m)^run (\d{8}-\d{4}-[0-9a-f]+) \(`)

// Code runs the binary with env and args and returns its output (stdout
// and stderr together) and exit code.
func Code(t testing.TB, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(Binary(t), args...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), 0
}

// Run runs the binary with args and returns its output; it fails t
// unless the binary exits 0.
func Run(t testing.TB, args ...string) string {
	t.Helper()
	out, code := Code(t, os.Environ(), args...)
	if code != 0 {
		t.Fatalf("selmix %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// ShortRoot is a temp dir with a short path: a run's control socket lives
// in its run directory, and socket paths are limited to about 100 bytes.
func ShortRoot(t testing.TB) string {
	dir, err := os.MkdirTemp("", "sm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// FirstDiff says where two event lists first differ.
func FirstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("event %d:\n  got  %.200s\n  want %.200s", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("one log is a prefix of the other (%d vs %d)", len(a), len(b))
}

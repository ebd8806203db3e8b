// Package selmixtest builds the real selmix binary and runs it for the
// tests that use it as a person or a script would (the cli package's, the
// run lifecycle's and the sweep end-to-end tests), with the helpers those
// packages share.
package selmixtest

import (
	"bufio"
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

	fixMu    sync.Mutex
	fixtures = map[string]*fixture{}
	fixDirs  []string
)

// fixture is one Shared fixture: made once, by the first test that asks.
type fixture struct {
	once sync.Once
	dir  string
	err  error
}

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
// tests, then removes the binary and the Shared fixtures.
func Main(m *testing.M) {
	// A test that runs a command in process which starts os.Executable
	// (a sweep's members) starts this test binary with selmix's
	// arguments: it would run every test again, each starting more.
	// Refuse at once; such a test must run the binary (Code, Start).
	if len(os.Args) > 1 && !strings.HasPrefix(os.Args[1], "-") {
		fmt.Fprintf(os.Stderr, "selmixtest: the test binary was started as selmix (%q): a test ran in process a command that starts os.Executable; run the real binary (selmixtest.Code)\n", strings.Join(os.Args[1:], " "))
		os.Exit(2)
	}
	// The processes the tests start use one BLAS thread each, as sweep
	// members do, unless a test's environment says otherwise: they run
	// two or more at once, beside other packages' tests, on a machine of
	// few cores, and OpenBLAS's idle threads spin (twice the CPU time).
	if _, ok := os.LookupEnv("OPENBLAS_NUM_THREADS"); !ok {
		os.Setenv("OPENBLAS_NUM_THREADS", "1")
	}
	code := m.Run()
	if path != "" {
		os.RemoveAll(filepath.Dir(path))
	}
	fixMu.Lock()
	for _, d := range fixDirs {
		os.RemoveAll(d)
	}
	fixMu.Unlock()
	os.Exit(code)
}

// Shared returns a folder that make filled, once per test process and
// key, for the tests that only read what it holds (or copy it first): an
// expensive fixture, such as a finished run, that several tests share.
// make runs in the first test that asks; if it fails, every test that
// asks fails with its error. Main removes the folder. Tests must not
// write into it.
func Shared(t testing.TB, key string, make func(dir string) error) string {
	t.Helper()
	fixMu.Lock()
	f := fixtures[key]
	if f == nil {
		f = &fixture{}
		fixtures[key] = f
	}
	fixMu.Unlock()
	f.once.Do(func() {
		f.err = errors.New("making it did not return") // a panic or t.FailNow in make
		dir, err := os.MkdirTemp("", "selmix-fixture-")
		if err != nil {
			f.err = err
			return
		}
		fixMu.Lock()
		fixDirs = append(fixDirs, dir)
		fixMu.Unlock()
		f.dir, f.err = dir, make(dir)
	})
	if f.err != nil {
		t.Fatalf("shared fixture %s: %v", key, f.err)
	}
	return f.dir
}

// RunIDRe finds the id in the line run and fork print as a run starts.
var RunIDRe = regexp.MustCompile(`(?m)^run (\d{8}-\d{4}-[0-9a-f]+) \(`)

var resumingRe = regexp.MustCompile(`(?m)^resuming run (\S+) from step`)

// Start starts the binary with env (nil: this process's) and args and
// returns it with a scanner over its output (stdout and stderr together).
func Start(t testing.TB, env []string, args ...string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(Binary(t), args...)
	cmd.Env = env
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewScanner(pipe)
}

// Output collects the output of a started run or resume, line by line
// (Add), and the ID of the run it names.
type Output struct {
	strings.Builder
	ID string
}

// Add appends line and takes the run id it names, if any.
func (o *Output) Add(line string) {
	o.WriteString(line + "\n")
	if m := RunIDRe.FindStringSubmatch(line); m != nil {
		o.ID = m[1]
	} else if m := resumingRe.FindStringSubmatch(line); m != nil {
		o.ID = m[1]
	}
}

// Drain reads the rest of a started process's output in the background,
// so that it never blocks writing it.
func Drain(sc *bufio.Scanner) {
	go func() {
		for sc.Scan() {
		}
	}()
}

// Code runs the binary with env and args and returns its output (stdout
// and stderr together) and exit code.
func Code(t testing.TB, env []string, args ...string) (string, int) {
	t.Helper()
	return code(t, exec.Command(Binary(t), args...), env)
}

// code runs cmd with the environment env and returns its output and
// exit code.
func code(t testing.TB, cmd *exec.Cmd, env []string) (string, int) {
	t.Helper()
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

// MemoryLimit is the address space (ulimit -v, KiB) CodeLimited gives
// the binary: what the README's Slurm example gives a member (mem = 4G).
const MemoryLimit = 4000000

// CodeLimited is Code with the binary's address space limited to
// MemoryLimit KiB, as a scheduler limits it.
func CodeLimited(t testing.TB, env []string, args ...string) (string, int) {
	t.Helper()
	return code(t, exec.Command("/bin/sh", append([]string{"-c", fmt.Sprintf(`ulimit -v %d && exec "$0" "$@"`, MemoryLimit), Binary(t)}, args...)...), env)
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

// LastLines is the last n lines of s.
func LastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

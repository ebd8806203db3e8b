// Package torch_test runs the PyTorch worker's own test suite (frames, steps
// against numpy oracles, the data path, determinism, save/load, recipes,
// failures) under go test, one Python test module per parallel subtest, so
// that `make test` runs it beside the Go packages rather than after them.
package torch_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// python is Debian's interpreter, with python3-torch, python3-numpy and
// python3-torchvision (.ci/run installs them); without torch and numpy the
// suite is skipped, saying so.
const python = "/usr/bin/python3"

func TestSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the PyTorch worker")
	}
	if err := exec.Command(python, "-c", "import torch, numpy").Run(); err != nil {
		t.Skipf("%s cannot import torch and numpy (apt install python3-torch python3-numpy): %v", python, err)
	}
	modules, err := filepath.Glob(filepath.Join("tests", "test_*.py"))
	if err != nil || len(modules) == 0 {
		t.Fatalf("no test modules under tests/ (%v)", err)
	}
	for _, m := range modules {
		name := strings.TrimSuffix(filepath.Base(m), ".py")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// From workers/torch, so that the tests import the package
			// selmix_torch beside them (python -m puts the current folder
			// on sys.path) and tests is a package of its own.
			cmd := exec.Command(python, "-m", "unittest", "tests."+name)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", name, err, out)
			}
			l := strings.Split(strings.TrimSpace(string(out)), "\n")
			t.Logf("%s", strings.Join(l[max(0, len(l)-3):], "\n"))
		})
	}
}

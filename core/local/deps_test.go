package local

import (
	"os/exec"
	"strings"
	"testing"
)

// Only the in-process trainer links gorgonia: the engine's vocabulary, the
// run store, the figures, the workbench and the worker client do not.
func TestOnlyLocalLinksGorgonia(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	deps := func(patterns ...string) []string {
		t.Helper()
		out, err := exec.Command(goBin, append([]string{"list", "-deps"}, patterns...)...).Output()
		if err != nil {
			t.Fatalf("go list -deps %v: %v", patterns, err)
		}
		var g []string
		for _, p := range strings.Fields(string(out)) {
			if strings.HasPrefix(p, "gorgonia.org/") {
				g = append(g, p)
			}
		}
		return g
	}
	if g := deps("selmix/core/local"); len(g) == 0 {
		t.Fatal("go list -deps selmix/core/local names no gorgonia package: the check below would prove nothing")
	}
	// The client, not its fake: core/worker/workertest serves a local.Local.
	free := []string{"selmix/core/train", "selmix/core/experiment", "selmix/core/worker", "selmix/runs/...", "selmix/viz/...", "selmix/tui/..."}
	if g := deps(free...); len(g) > 0 {
		t.Errorf("%v link gorgonia (%s); only core/local may", free, strings.Join(g, ", "))
	}
}

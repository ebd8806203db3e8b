package app

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The application layer sits under the command line and beside the
// workbench: it links neither (the workbench is wired in cli).
func TestAppLinksNoUI(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	above := func(pkg string) []string {
		t.Helper()
		out, err := exec.Command(goBin, "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		var got []string
		for _, p := range strings.Fields(string(out)) {
			if p == "selmix/tui" || strings.HasPrefix(p, "selmix/tui/") || strings.HasPrefix(p, "selmix/cmd/") {
				got = append(got, p)
			}
		}
		return got
	}
	if len(above("selmix/cmd/selmix")) == 0 {
		t.Fatal("go list -deps selmix/cmd/selmix names no tui or cmd package: the check below would prove nothing")
	}
	if got := above("selmix/app"); len(got) > 0 {
		t.Errorf("selmix/app links %s; the command line wires those", strings.Join(got, ", "))
	}
}

// Layers point down: the engine links no store, UI, figures or
// application; the store links no figures, UI or application; the
// workbench links no plotting library (its figures are injected, as
// screen.Screens.Export); the comparison view links not the runs browser.
func TestLayersPointDown(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	deps := func(pattern string) []string {
		t.Helper()
		out, err := exec.Command(goBin, "list", "-deps", pattern).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pattern, err)
		}
		return strings.Fields(string(out))
	}
	under := func(prefixes ...string) func(string) bool {
		return func(p string) bool {
			for _, pre := range prefixes {
				if p == pre || strings.HasPrefix(p, pre+"/") {
					return true
				}
			}
			return false
		}
	}
	for _, c := range []struct {
		pattern, what string
		banned        func(string) bool
		// witness is a package that does link what is banned: proof that
		// the check can fail.
		witness string
	}{
		{"selmix/core/...", "selmix/runs, tui, viz or app", under("selmix/runs", "selmix/tui", "selmix/viz", "selmix/app"), "selmix/cmd/selmix"},
		{"selmix/runs/...", "selmix/viz, tui or app", under("selmix/viz", "selmix/tui", "selmix/app"), "selmix/cmd/selmix"},
		{"selmix/tui/...", "gonum.org/v1/plot", under("gonum.org/v1/plot"), "selmix/viz"},
		{"selmix/tui/compare", "selmix/tui/browser", under("selmix/tui/browser"), "selmix/tui/screen"},
		{"selmix/runs/...", "os/signal (the sweep executors are in app/sweepexec)", under("os/signal"), "selmix/app/sweepexec"},
	} {
		if !slices.ContainsFunc(deps(c.witness), c.banned) {
			t.Errorf("%s links no %s: the check on %s would prove nothing", c.witness, c.what, c.pattern)
		}
		var got []string
		for _, p := range deps(c.pattern) {
			if c.banned(p) {
				got = append(got, p)
			}
		}
		if len(got) > 0 {
			t.Errorf("%s links %s: want no %s", c.pattern, strings.Join(got, ", "), c.what)
		}
	}
	// Processes are started by the application: no package of the store
	// imports os/exec itself (core/gpu, which asks nvidia-smi, may).
	out, err := exec.Command(goBin, "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "selmix/runs/...", "selmix/app/sweepexec").Output()
	if err != nil {
		t.Fatalf("go list -f selmix/runs/...: %v", err)
	}
	witness := false
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if !slices.Contains(f[1:], "os/exec") {
			continue
		}
		if f[0] == "selmix/app/sweepexec" {
			witness = true
		} else {
			t.Errorf("%s imports os/exec: want processes started in app", f[0])
		}
	}
	if !witness {
		t.Error("selmix/app/sweepexec imports no os/exec: the check on selmix/runs/... would prove nothing")
	}
}

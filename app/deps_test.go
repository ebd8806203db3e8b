package app

import (
	"os/exec"
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

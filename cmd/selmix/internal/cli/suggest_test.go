package cli

import (
	"strings"
	"testing"
)

// A mistyped command, objective or key is answered with what it is near,
// on one line, with exit 2.
func TestDidYouMean(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"runz"}, `unknown command "runz" for "selmix" (did you mean run or runs?)`},
		{[]string{"runs", "shw"}, `unknown command "shw" for "selmix runs" (did you mean show?)`},
		{[]string{"sweep", "stauts"}, `unknown command "stauts" for "selmix sweep" (did you mean status?)`},
		{[]string{"config", "--set", "finetune.objective=minrecall"}, `unknown objective "minrecall" (did you mean min-recall?)`},
		{[]string{"config", "--set", "finetune.policy=selmux"}, `unknown policy "selmux" (did you mean selmix?)`},
		{[]string{"config", "--set", "finetune.objectiv=hmean"}, `unknown key finetune.objectiv (did you mean finetune.objective?)`},
		{[]string{"runs", "show", "--runs", vizRuns, "viz-selmx"}, `no run "viz-selmx" in ` + vizRuns + `; nearest: 20261123-1200-819c ("viz-selmix"), 20261123-1201-c986 ("viz-uniform")`},
	} {
		code, _, stderr := runCLI(c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line containing %q", c.args, code, stderr, c.want)
		}
	}
	// A word near nothing gets no suggestion.
	if _, _, stderr := runCLI("xyzzy"); strings.Contains(stderr, "did you mean") {
		t.Errorf("xyzzy: %q", stderr)
	}
}

package cli

import (
	"strings"
	"testing"

	"selmix/cmd/selmix/internal/selmixtest"
)

// A session that began at a checkpoint reports its own steps, not the
// run's total (issue 26: a resume after Ctrl-C printed "3698 fine-tuning
// steps in 5.0s" when ~1290 ran in it). A fork at step 20 of a 40-step
// run is such a session, and runs show reads the same from the log.
// Through the binary: in this process, under the race detector, the two
// runs took a minute.
func TestSummaryCountsTheSessionsSteps(t *testing.T) {
	if testing.Short() {
		t.Skip("trains two short runs")
	}
	t.Parallel()
	root := t.TempDir()
	set := []string{"--set", "finetune.steps=40", "--set", "finetune.refresh=10", "--set", "finetune.checkpoint_every=1", "--set", "record.plots=false"}
	out := selmixtest.Run(t, append([]string{"run", "--headless", "-q", "--runs", root}, set...)...)
	if !strings.Contains(out, "* optimized objective; 40 fine-tuning steps in ") {
		t.Errorf("run: summary does not count 40 steps:\n%s", out)
	}
	parent := selmixtest.RunIDRe.FindStringSubmatch(out)[1]
	out = selmixtest.Run(t, "fork", "-q", "--runs", root, parent, "--at", "20")
	const want = "* optimized objective; 20 fine-tuning steps in this session (steps 20 to 40) in "
	if !strings.Contains(out, want) {
		t.Errorf("fork at 20: summary lacks %q:\n%s", want, out)
	}
	fork := selmixtest.RunIDRe.FindStringSubmatch(out)[1]
	if out = selmixtest.Run(t, "runs", "show", "--runs", root, fork); !strings.Contains(out, want) {
		t.Errorf("runs show of the fork lacks %q:\n%s", want, out)
	}
}

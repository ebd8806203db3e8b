package torch_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"selmix/app/sweepexec/slurmtest"
)

// TestSrun runs the worker's two ranks as one Slurm task on a throw-away
// single-node cluster, the README's `srun … torchrun …` with the tests'
// stand-in for torchrun: selmix's frames reach rank 0 through srun's stdin
// and stdout. It needs root, slurm-wlm and munge (skipped without them).
func TestSrun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the PyTorch worker on a Slurm cluster")
	}
	if err := exec.Command(python, "-c", "import torch, numpy").Run(); err != nil {
		t.Skipf("%s cannot import torch and numpy: %v", python, err)
	}
	c := slurmtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-m", "unittest", "tests.test_dist.Srun")
	cmd.Env = append(c.Env(), "SELMIX_TEST_SRUN=1")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Contains(string(out), "skipped") {
		t.Fatalf("test_dist.Srun: %v\n%s", err, out)
	}
}

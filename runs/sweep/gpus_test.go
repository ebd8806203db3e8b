package sweep_test

import (
	"strings"
	"testing"

	"selmix/core/search"
	"selmix/runs/sweep/sweeptest"
)

func TestGresGPUs(t *testing.T) {
	for _, c := range []struct {
		gres string
		n    int
		ok   bool
	}{{"gpu:2", 2, true}, {"gpu:a100:4", 4, true}, {"gpu", 1, true}, {"gpu:a100", 1, true}, {"lscratch:10,gpu:3", 3, true}, {"", 0, false}, {"lscratch:10", 0, false}} {
		if n, ok := search.GresGPUs(c.gres); n != c.n || ok != c.ok {
			t.Errorf("GresGPUs(%q) = %d, %v; want %d, %v", c.gres, n, ok, c.n, c.ok)
		}
	}
}

// --gpus-per-member N on Slurm: gres gpu:N unless the spec asks for GPUs
// already; the same number is kept, another is bad input naming both.
func TestSetGPUsPerTask(t *testing.T) {
	for _, c := range []struct{ slurm, want, err string }{
		{"", "gpu:2", ""},
		{"[slurm]\npartition = \"p\"\n", "gpu:2", ""},
		{"[slurm]\ngres = \"lscratch:10\"\n", "lscratch:10,gpu:2", ""},
		{"[slurm]\ngres = \"gpu:a100:2\"\n", "gpu:a100:2", ""},
		{"[slurm]\ngres = \"gpu:1\"\n", "gpu:1", `--gpus-per-member 2: the spec's [slurm] gres "gpu:1" asks for 1 GPU(s) per task`},
	} {
		s := sweeptest.New(t, sweeptest.SmallSpec+c.slurm, search.ExecSlurm)
		err := s.SetGPUsPerTask("--gpus-per-member", 2)
		if c.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.slurm, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		script, err := s.BatchScript("/opt/bin/selmix")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(script, "\n#SBATCH --gres="+c.want+"\n") || strings.Count(script, "--gres") != 1 {
			t.Errorf("%q: script lacks one #SBATCH --gres=%s:\n%s", c.slurm, c.want, script)
		}
	}
}

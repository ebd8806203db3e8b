package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"selmix/app"
	"selmix/bench"
	"selmix/core/gpu"
	"selmix/core/search"
	"selmix/runs/sweep"
)

type benchFlags struct {
	bench.PaperOptions
	smoke   bool
	out     string
	report  []string
	noSemi  bool
	sweep   sweepFlags
	dataDir string
}

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Experiment suites"}
	var f benchFlags
	paper := &cobra.Command{
		Use:   "paper [--seeds 3] [--parallel 2] [--out docs/results.md] | paper --report SWEEP",
		Short: "Reproduce the paper's tables on Fashion-MNIST-LT and write them as Markdown",
		Long: `paper runs the paper-reproduction suite, the sweep spec bench/paper-sweep.toml
(built in): per seed an LA-CE model pre-trained once on Fashion-MNIST-LT
(ρ = 100, full official test set), fine-tuned with SelMix for each
objective, with each policy on min-recall and mean-recall@cov, with the
official gain form, with refresh 10 and finetune.adapt, and in the
semi-supervised setting. It runs the sweep here (--parallel members at once)
and writes the tables (mean ± std over seeds), checks of the paper's claims,
figures and every run's configuration to --out.

On a cluster, run the same spec with selmix sweep bench/paper-sweep.toml
--executor slurm, then write the report with --report SWEEP.
--smoke runs one seed with few steps (CI).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.sweep.check(cmd); err != nil {
				return err
			}
			return benchPaper(cmd, f)
		},
	}
	fl := paper.Flags()
	fl.IntVar(&f.Seeds, "seeds", 0, "number of seeds (default: the spec's 3)")
	fl.IntVar(&f.Steps, "steps", 0, "fine-tuning steps per run (default: the spec's 2000)")
	fl.IntVar(&f.Epochs, "epochs", 0, "pre-training epochs (default: the spec's 20)")
	fl.BoolVar(&f.smoke, "smoke", false, "1 seed, 60 steps, 1 epoch: checks the suite runs end to end")
	fl.BoolVar(&f.noSemi, "no-semi", false, "leave out the semi-supervised rows")
	fl.StringVar(&f.out, "out", "docs/results.md", "Markdown `FILE` to write (figures go to figures/ beside it)")
	fl.StringArrayVar(&f.report, "report", nil, "write the report of finished paper `SWEEP`s (e.g. run on Slurm; repeatable: a later sweep may add rows) instead of running one")
	fl.StringArrayVar(&f.Sets, "set", nil, "extra `section.key=value` for every run (repeatable), e.g. finetune.lr=0.001")
	fl.StringVar(&f.DataDir, "data", "", "Fashion-MNIST IDX `DIR` (default: the config's data.dir)")
	fl.IntVar(&f.sweep.parallel, "parallel", 0, "members at once (default: CPUs / --threads)")
	fl.IntVar(&f.sweep.threads, "threads", 0, "OPENBLAS_NUM_THREADS and GOMAXPROCS of each member (default 1, or CPUs / --parallel)")
	addRunsFlag(paper, &f.sweep.runs)
	cmd.AddCommand(paper, newBenchScaleCmd(), newBenchWorkerCmd())
	return cmd
}

func benchPaper(cmd *cobra.Command, f benchFlags) error {
	w := cmd.OutOrStdout()
	root := f.sweep.runs
	if root == "" {
		root = filepath.Join("runs", "bench-paper")
	}
	command := "selmix bench paper " + strings.Join(os.Args[min(len(os.Args), 3):], " ")
	var ss []*sweep.Sweep
	if len(f.report) > 0 {
		for _, q := range f.report {
			s, err := app.OpenSweep(root, q)
			if err != nil {
				return err
			}
			ss = append(ss, s)
		}
	} else {
		s, err := runPaper(cmd, root, f)
		if err != nil {
			return err
		}
		ss = append(ss, s)
	}
	figErr, err := bench.WritePaperReport(ss, command, f.out)
	if err != nil {
		return err
	}
	if figErr != nil {
		fmt.Fprintf(w, "warning: figures: %v\n", figErr)
	}
	fmt.Fprintf(w, "wrote %s\n", f.out)
	return nil
}

// runPaper creates the suite's sweep in the runs root root and runs it here.
func runPaper(cmd *cobra.Command, root string, f benchFlags) (*sweep.Sweep, error) {
	if f.smoke {
		f.Smoke()
	}
	f.Semi = !f.noSemi
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	// Each seed's model is pre-trained once, by its first member.
	f.Cache = filepath.Join(abs, ".pretrained")
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	s, spec, text, err := bench.PlanPaper(root, wd, f.PaperOptions)
	if err != nil {
		return nil, app.UsageError{Err: err}
	}
	if err := s.Create(spec, text); err != nil {
		return nil, err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "sweep %s: %d members in %s\n", s.ID, len(s.Members), s.Dir)
	o := f.sweep.options()
	// The suite trains in process: no GPU to place, and --parallel is not
	// capped at the GPU slots of a GPU box.
	o.GPUs = gpu.None
	o.Executor = search.ExecLocal
	return s, app.ExecuteSweep(cmd.Context(), cmd.OutOrStdout(), s, s.AllMembers(), o)
}

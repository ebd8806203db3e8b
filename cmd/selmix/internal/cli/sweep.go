package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"selmix/app"
	"selmix/app/sweepexec"
	"selmix/core/gpu"
	"selmix/core/search"
	"selmix/internal/safetext"
	"selmix/runs/sweep"
	"selmix/viz"
)

// Sweeps: the logic lives in runs/sweep and app (its sweep.go); this file
// defines the commands (docs/sweeps.md).

type sweepFlags struct {
	runs, executor    string
	parallel, threads int
	gpus              string
	gpusPer           int
	dryRun            bool
	search            string // sweep only: grid or asha
}

func (f *sweepFlags) add(cmd *cobra.Command, executorHelp string) {
	cmd.Flags().StringVar(&f.executor, "executor", "", executorHelp)
	cmd.Flags().IntVar(&f.parallel, "parallel", 0, "local: members at once (default: the GPU slots where there are GPUs, else CPUs / --threads)")
	cmd.Flags().StringVar(&f.gpus, "gpus", "", "local: the GPUs members run on: auto (CUDA_VISIBLE_DEVICES, else nvidia-smi), none (CUDA_VISIBLE_DEVICES=\"\"), or a `LIST` such as 0,1 (default: the sweep's, else auto)")
	cmd.Flags().IntVar(&f.gpusPer, "gpus-per-member", 0, "GPUs each member gets (`N`; on Slurm the gres gpu:N; default: the sweep's, else 1)")
	cmd.Flags().IntVar(&f.threads, "threads", 0, "local: OPENBLAS_NUM_THREADS and GOMAXPROCS of each member (default 1, or CPUs / --parallel)")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "print what would run (the members; the batch script on Slurm) and start nothing")
	addRunsFlag(cmd, &f.runs)
}

func (f *sweepFlags) check(cmd *cobra.Command) error {
	if cmd.Flags().Changed("gpus-per-member") {
		if err := gpu.CheckPer(f.gpusPer); err != nil {
			return app.UsageError{Err: err}
		}
	}
	if cmd.Flags().Changed("gpus") && f.gpus == "" {
		return app.BadInput("--gpus \"\": want auto, none or a list of GPU ids such as 0,1")
	}
	switch f.executor {
	case "", search.ExecLocal, search.ExecSlurm:
	default:
		return app.BadInput("--executor %q: want local or slurm", f.executor)
	}
	if f.parallel < 0 || f.threads < 0 {
		return app.BadInput("--parallel and --threads must be ≥ 1 (or left out)")
	}
	switch f.search {
	case "", search.Grid, search.Random, search.SuccessiveHalving, search.PopulationBased:
	default:
		return app.BadInput("--search %q: want grid, random, asha or pbt", safetext.Middle(f.search, 64))
	}
	return nil
}

// options are the app.SweepOptions of the flags.
func (f *sweepFlags) options() app.SweepOptions {
	return app.SweepOptions{Executor: f.executor, Parallel: f.parallel, Threads: f.threads, GPUs: f.gpus, GPUsPerMember: f.gpusPer, DryRun: f.dryRun, Search: f.search}
}

// runE is the RunE of sweep and sweep resume: do with the runs root and
// the one argument once the flags are checked.
func (f *sweepFlags) runE(do func(ctx context.Context, w io.Writer, root, arg string, o app.SweepOptions) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := f.check(cmd); err != nil {
			return err
		}
		return do(cmd.Context(), cmd.OutOrStdout(), f.runs, args[0], f.options())
	}
}

func newSweepCmd() *cobra.Command {
	var f sweepFlags
	cmd := &cobra.Command{
		Use:   "sweep SPEC.toml [--search grid|asha|pbt] [--executor local|slurm] [--parallel N] [--gpus auto|none|LIST] [--gpus-per-member N] [--dry-run]",
		Short: "Run a grid of runs from a spec (or successive halving over it): locally N at a time, or as a Slurm job array",
		Long: `sweep reads a spec (TOML: a base configuration, [axes] taken as a product
and/or [[rows]], an optional [slurm] table; see docs/sweeps.md), checks every
member's configuration, records the sweep in <runs>/sweeps/<name>-<id>/ and
starts it. Each member records an ordinary run named <sweep id>-<index>.

local runs --parallel members at once, each in its own process (on a GPU box
each with --gpus-per-member GPUs of its own: CUDA_VISIBLE_DEVICES), and exits 0
when all finished, 130/143 when interrupted (the members stop cleanly and
resume), 1 if some failed. slurm submits one array job (task id = member
index) with sbatch and returns; the default is slurm when the spec has a
[slurm] table, else local.

--search asha runs successive halving (ASHA) over the grid's members
instead: each runs to its first rung and stops there (resumable); the top
1/eta of those that reached a rung go on to the next as they report, by
validation ψ; the last rung runs to the end. The spec's [asha] table sets
min_steps, eta (default 3) and metric (docs/sweeps.md).

--search pbt runs population-based training with the members as the
first population: every interval steps each stops (resumable) and is
ranked by validation ψ; the worst quarter continue from the best
quarter's checkpoints (a fork, with settings perturbed; the change
logged as a control from pbt) and all go on. The spec's [pbt] table sets
interval, quantile, explore (perturb or resample), keys, metric and seed.

Both run here or on Slurm; on Slurm this process keeps the schedule and
sends each member's run to its next stop as a job.

  selmix sweep status SWEEP [--watch]   the members, their state and ψ
  selmix sweep resume SWEEP             rerun what failed, was cancelled or crashed
  selmix sweep report SWEEP             mean ± std over seeds, as Markdown
  selmix sweep open SWEEP               the sweep in the terminal workbench`,
		Args: withSuggestions(cobra.ExactArgs(1)),
		RunE: f.runE(app.StartSweep),
	}
	f.add(cmd, "local or slurm (default: slurm if the spec has [slurm], else local)")
	cmd.Flags().StringVar(&f.search, "search", search.Grid, "grid (every member runs to its end), random (members drawn by the spec's [random] and distributions, each run to its end), asha (successive halving over the members, by the spec's [asha]) or pbt (population-based training from the members, by the spec's [pbt]); on Slurm, asha and pbt keep their schedule here and send each run to a stop as a job")
	cmd.AddCommand(newSweepMemberCmd(), newSweepForecastCmd(), newSweepResumeCmd(), newSweepStatusCmd(), newSweepLsCmd(),
		newSweepReportCmd(), newSweepOpenCmd())
	return cmd
}

// newSweepMemberCmd is the one entry point of a member, for both
// executors and for Slurm's requeues.
func newSweepMemberCmd() *cobra.Command {
	var quiet bool
	var stopAt int
	cmd := &cobra.Command{
		Use:   "member SWEEPDIR INDEX [--stop-at STEP]",
		Short: "Run, resume or skip one member of a sweep (what the executors and Slurm tasks run)",
		Long: `member runs member INDEX of the sweep in SWEEPDIR: it starts its run if there
is none, resumes it if it has not finished, and exits 0 at once if it has.
Exit codes are those of run and resume: 130/143 when interrupted (resumable).
--stop-at STEP stops the run at that step, resumable exactly, and exits 0
(successive halving's rungs); a run stopped there already is left alone.`,
		Args:   cobra.ExactArgs(2),
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := sweep.Load(args[0])
			if err != nil {
				return app.UsageError{Err: err}
			}
			i, err := strconv.Atoi(args[1])
			if err != nil {
				return app.BadInput("member index %q is not a number", args[1])
			}
			if stopAt < 0 {
				return app.BadInput("--stop-at %d: want a step ≥ 1 (or 0: the end)", stopAt)
			}
			ses := newSession(cmd.OutOrStdout(), "", quiet, false)
			ses.StopAt = stopAt
			return ses.SweepMember(cmd.Context(), s, i)
		},
	}
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only the final table")
	cmd.Flags().IntVar(&stopAt, "stop-at", 0, "stop the run at `STEP` (resumable) and exit 0; 0 runs it to its end")
	return cmd
}

// maxCandidates bounds the candidates sweep forecast reads (1 MiB of JSON).
const maxCandidates = 1 << 20

// newSweepForecastCmd forecasts candidate settings from a run's
// checkpoint for a population's explore = forecast (the scheduler runs it
// in the sweep's workdir).
func newSweepForecastCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "forecast SWEEPDIR RUN STEP < CANDIDATES.json",
		Short: "Forecast Δψ of candidate settings from a run's checkpoint (what explore = forecast runs)",
		Long: `forecast reads a JSON array of candidates, each an array of finetune.key=value
settings, and prints a JSON array of the change of ψ the run's linear model
forecasts under each over the interval its checkpoint at STEP opens (null
where it forecasts none), as the workbench's what-if preview does. It
restores the run's trainer and runs no step.`,
		Args:   cobra.ExactArgs(3),
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := sweep.Load(args[0])
			if err != nil {
				return app.UsageError{Err: err}
			}
			step, err := strconv.Atoi(args[2])
			if err != nil || step < 1 {
				return app.BadInput("step %q: want a checkpoint's step ≥ 1", safetext.Middle(args[2], 32))
			}
			in, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), maxCandidates+1))
			if err != nil {
				return err
			}
			var cands [][]string
			if len(in) > maxCandidates || json.Unmarshal(in, &cands) != nil {
				return app.BadInput("standard input: want a JSON array of candidates, each an array of finetune.key=value, at most %d bytes", maxCandidates)
			}
			ses := newSession(io.Discard, s.Root, true, false)
			fs, err := ses.Forecasts(cmd.Context(), args[1], step, cands)
			if err != nil {
				return err
			}
			out := make([]*float64, len(fs))
			for i := range fs {
				if !math.IsNaN(fs[i]) {
					out[i] = &fs[i]
				}
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(out)
		},
	}
}

func newSweepResumeCmd() *cobra.Command {
	var f sweepFlags
	cmd := &cobra.Command{
		Use:   "resume SWEEP [--executor local|slurm] [--parallel N] [--gpus auto|none|LIST] [--gpus-per-member N] [--dry-run]",
		Short: "Run again the members that failed, were cancelled or preempted, or crashed",
		Long: `resume finds the members that are neither finished nor running nor queued
(from the run store, and from squeue/sacct when the sweep ran on Slurm) and
runs them again with the sweep's executor (or --executor): on Slurm as one
array job of just those tasks (--array=i,j,k), locally as sweep does. Each
resumes its run from its last checkpoint, or starts it if it never ran.
SWEEP is a sweep id, a unique prefix, a name, or a sweep folder.`,
		Args: cobra.ExactArgs(1),
		RunE: f.runE(app.ResumeSweep),
	}
	f.add(cmd, "local or slurm (default: the one the sweep ran with)")
	return cmd
}

// sweepCmd makes cmd take one SWEEP (an id, a unique prefix, a name or a
// sweep folder) in the runs root of its --runs flag and run do with it.
func sweepCmd(cmd *cobra.Command, do func(cmd *cobra.Command, s *sweep.Sweep) error) *cobra.Command {
	cmd.Args = cobra.ExactArgs(1)
	return rootCmd(cmd, func(root string, args []string) (*sweep.Sweep, error) { return app.OpenSweep(root, args[0]) }, do)
}

func newSweepStatusCmd() *cobra.Command {
	var watch bool
	cmd := sweepCmd(&cobra.Command{
		Use:   "status SWEEP [--watch]",
		Short: "One line per member: values, run, state (and Slurm's), step, ψ now, best ψ",
		Long: `status reads every member's run from the run store (and the array tasks'
states from squeue/sacct when the sweep ran on Slurm) and prints one line per
member and a summary. --watch redraws every 2 s until nothing runs or waits.`,
	}, func(cmd *cobra.Command, s *sweep.Sweep) error {
		return sweepStatus(cmd.Context(), cmd.OutOrStdout(), s, watch)
	})
	cmd.Flags().BoolVar(&watch, "watch", false, "redraw every 2 s until every member has ended")
	return cmd
}

// sweepStatus prints the status table of s; with watch, every 2 s until
// every member has ended or a signal comes.
func sweepStatus(ctx context.Context, w io.Writer, s *sweep.Sweep, watch bool) error {
	ctx, cancel := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer cancel()
	var every time.Duration
	if watch {
		every = 2 * time.Second
	}
	return sweep.NewReader(s, sweepexec.Commands{}).Watch(ctx, w, every, isTerminal(w))
}

func newSweepLsCmd() *cobra.Command {
	return listCmd("ls", "List the sweeps in the runs root",
		func(cmd *cobra.Command, root string) error {
			return sweep.WriteList(cmd.Context(), cmd.OutOrStdout(), root, sweepexec.Commands{})
		})
}

func newSweepReportCmd() *cobra.Command {
	var out, format, vs string
	cmd := sweepCmd(&cobra.Command{
		Use:   "report SWEEP [--out FILE.md] [--vs KEY=VALUE]",
		Short: "Markdown table of the sweep: mean ± std over seeds of the test metrics, and comparison figures",
		Long: `report groups the members by every axis but seed and writes, for each group,
the mean ± sample standard deviation over its finished members of the test
metrics of their final summaries (the optimized objective ψ, mean and min
recall, H-mean, G-mean, min coverage), then the comparison figures of
selmix export --compare (one run per group) into FILE-figures/ beside it.
The default --out is report.md in the sweep folder, and the table is then
printed too; with --out only where it was written.

--vs KEY=VALUE (e.g. --vs finetune.policy=resample) adds to each table the
seed-paired difference against that reference: for each group, each
member's metrics minus those of the member with KEY=VALUE, the same seed
and the same other values, as mean ± sample std over the seeds both
finished.`,
	}, func(cmd *cobra.Command, s *sweep.Sweep) error {
		var ref *string // nil without --vs
		if cmd.Flags().Changed("vs") {
			ref = &vs
		}
		return sweepReport(cmd.OutOrStdout(), s, out, format, ref)
	})
	cmd.Flags().StringVar(&out, "out", "", "Markdown `FILE` to write (default <sweep folder>/report.md)")
	cmd.Flags().StringVar(&vs, "vs", "", "add the seed-paired difference against the members with `KEY=VALUE` (a column but seed, e.g. finetune.policy=resample)")
	cmd.Flags().StringVar(&format, "format", "png", "figure format: png|svg|pdf|tex")
	return cmd
}

func sweepReport(w io.Writer, s *sweep.Sweep, out, format string, vs *string) error {
	// The table is printed where no file was asked for; with --out the
	// file is what was asked for, and the terminal says where it went.
	show := out == ""
	if out == "" {
		out = filepath.Join(s.Dir, "report.md")
	}
	if !strings.HasSuffix(out, ".md") {
		return app.BadInput("--out %q: want a .md file", out)
	}
	res, err := s.Results()
	if err != nil {
		return err
	}
	o := viz.SweepOptions{Format: format}
	if vs != nil {
		ref, err := res.ParseReference(*vs)
		if err != nil {
			return app.BadInput("--vs %q: %v", safetext.Middle(*vs, 64), err)
		}
		o.Vs = &ref
	}
	md, notes, err := viz.WriteSweepReport(res, out, o)
	if err != nil {
		return err
	}
	if show {
		fmt.Fprint(w, md)
	}
	for _, n := range notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	fmt.Fprintf(w, "\nwrote %s\n", out)
	return nil
}

func newSweepOpenCmd() *cobra.Command {
	var keysPath string
	cmd := sweepCmd(&cobra.Command{
		Use:   "open SWEEP",
		Short: "The sweep in the terminal: members, states, live ψ sparklines; Enter opens or attaches to one",
	}, func(cmd *cobra.Command, s *sweep.Sweep) error {
		sc, err := newScreens(cmd, keysPath)
		if err != nil {
			return err
		}
		return screenExit(sc.Sweep(cmd.Context(), s))
	})
	addKeysFlag(cmd, &keysPath)
	return cmd
}

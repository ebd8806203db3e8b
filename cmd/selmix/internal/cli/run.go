package cli

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"selmix/app"
	"selmix/core/experiment"
	"selmix/runs"
)

// startFlags say what run, tui and bare selmix start: the experiment
// (--config, --set and, with --worker, the worker's command after --) and
// the runs root it is recorded in.
type startFlags struct {
	config string
	sets   []string
	runs   string
	worker bool
	gpus   string
}

// add registers --config, --set, --runs and --gpus; addWorkerFlag adds
// --worker where the command takes the worker's command.
func (f *startFlags) add(cmd *cobra.Command) {
	addConfigFlags(cmd, &f.config, &f.sets)
	addRunsFlag(cmd, &f.runs)
	cmd.Flags().StringVar(&f.gpus, "gpus", "", "the GPUs the worker sees: a `LIST` such as 0,1 (checked against the box), none (CUDA_VISIBLE_DEVICES=\"\"), or auto (default: CUDA_VISIBLE_DEVICES as it is)")
}

// gpuEnv is the worker's environment of --gpus (app.GPUEnv).
func (f *startFlags) gpuEnv(cmd *cobra.Command) ([]string, error) {
	if cmd.Flags().Changed("gpus") && f.gpus == "" {
		return nil, app.BadInput("--gpus \"\": want auto, none or a list of GPU ids such as 0,1")
	}
	return app.GPUEnv(cmd.Context(), f.gpus)
}

// takeWorker adds the overrides of `--worker -- CMD ARGS...` (workerArgs)
// to the --set ones.
func (f *startFlags) takeWorker(cmd *cobra.Command, args []string) error {
	ws, err := workerArgs(cmd, f.worker, args, f.sets)
	if err != nil {
		return err
	}
	f.sets = append(f.sets, ws...)
	return nil
}

type runFlags struct {
	startFlags
	headless bool
	quiet    bool
	detach   bool
	serve    bool
	shake    bool
}

func addWorkerFlag(cmd *cobra.Command, worker *bool) {
	cmd.Flags().BoolVar(worker, "worker", false, "train in a worker process: the command after -- (docs/worker-protocol.md)")
}

// workerArgs turns `--worker -- CMD ARGS...` into configuration overrides
// (experiment.WorkerSets, beside sets, the --set ones).
func workerArgs(cmd *cobra.Command, worker bool, args, sets []string) ([]string, error) {
	if !worker {
		if len(args) > 0 {
			return nil, app.BadInput("unexpected arguments %q (a worker command goes after --worker --)", args)
		}
		return nil, nil
	}
	if cmd.ArgsLenAtDash() != 0 || len(args) == 0 {
		return nil, app.BadInput("--worker: give the worker's command after --, e.g. --worker -- python3 workers/torch/selmix_worker.py --recipe features ...")
	}
	return experiment.WorkerSets(args, sets)
}

func addConfigFlags(cmd *cobra.Command, config *string, sets *[]string) {
	cmd.Flags().StringVar(config, "config", "", "experiment configuration `FILE` (TOML; see `selmix config`)")
	cmd.Flags().StringArrayVar(sets, "set", nil, "override one configuration key: `section.key=value` (repeatable)")
}

func addRunsFlag(cmd *cobra.Command, root *string) {
	cmd.Flags().StringVar(root, "runs", "", "runs root `DIR` (default $SELMIX_RUNS, else ./runs)")
}

// rootCmd gives cmd the --runs flag; its RunE opens what the arguments
// name in that runs root and runs do with it.
func rootCmd[T any](cmd *cobra.Command, open func(root string, args []string) (T, error), do func(cmd *cobra.Command, v T) error) *cobra.Command {
	var root string
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		v, err := open(runs.Root(root), args)
		if err != nil {
			return err
		}
		return do(cmd, v)
	}
	addRunsFlag(cmd, &root)
	return cmd
}

// listCmd is a command without arguments that prints a listing of the runs
// root.
func listCmd(use, short string, list func(cmd *cobra.Command, root string) error) *cobra.Command {
	return rootCmd(&cobra.Command{Use: use, Short: short, Args: cobra.NoArgs},
		func(root string, _ []string) (string, error) { return root, nil }, list)
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run --headless [--config FILE] [--set section.key=value ...] [--gpus LIST] [--worker -- CMD ARGS...]",
		Short: "Fine-tune with SelMix without the workbench (scripts, CI, Slurm)",
		Long: `run pre-trains if no checkpoint is given (the built-in experiment ships one),
fine-tunes with SelMix, prints one line per refresh and a table of every metric
before and after fine-tuning, and records the run (config, event log,
checkpoints, summary) in the runs root.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var shake *app.Handshake
			if f.shake {
				shake = app.NewHandshake()
			}
			if err := f.takeWorker(cmd, args); err != nil {
				return err
			}
			c, err := loadConfig(f.config, f.sets)
			if err != nil {
				shake.Fail(err)
				return err
			}
			env, err := f.gpuEnv(cmd)
			if err != nil {
				shake.Fail(err)
				return err
			}
			w := cmd.OutOrStdout()
			if f.detach {
				id, pid, err := app.SpawnDetached(f.runs, f.config, f.sets, f.gpus)
				if err != nil {
					return err
				}
				fmt.Fprintf(w, "run %s started in the background (pid %d); its output goes to %s\n",
					id, pid, filepath.Join(runs.Root(f.runs), id, "output.log"))
				fmt.Fprintf(w, "  selmix attach %s    watch it\n  selmix stop %s      stop it\n", id, id)
				return nil
			}
			if !f.headless {
				return app.BadInput("choose --headless (here) or --detach (in the background); bare `selmix` opens the workbench")
			}
			s := newSession(shake.Relay(w), f.runs, f.quiet, f.serve)
			s.WorkerEnv = env
			if shake != nil {
				s.Created = shake.Created(f.runs)
			}
			err = s.Start(cmd.Context(), c, app.Origin{})
			shake.Fail(err)
			return err
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&f.headless, "headless", false, "run without the terminal workbench")
	cmd.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "print only the final table")
	cmd.Flags().BoolVar(&f.detach, "detach", false, "run in the background, immune to hang-ups; attach with `selmix attach`")
	cmd.Flags().BoolVar(&f.serve, "serve", false, "serve the run's control socket so viewers can attach")
	addWorkerFlag(cmd, &f.worker)
	cmd.Flags().BoolVar(&f.shake, "handshake", false, "internal: report the run id on fd 3 (used by --detach)")
	cmd.Flags().MarkHidden("handshake")
	return cmd
}

func loadConfig(path string, sets []string) (experiment.Config, error) {
	c, err := experiment.Load(path, sets)
	if err != nil {
		return c, app.UsageError{Err: err}
	}
	return c, nil
}

package cli

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"selmix/app"
	"selmix/bench"
	"selmix/internal/atomicfile"
)

func newBenchWorkerCmd() *cobra.Command {
	o := bench.WorkerOptions{Steps: 200, Batch: 64, Refresh: 50, LoaderWorkers: 2, Repeat: 1}
	var out, dir string
	cmd := &cobra.Command{
		Use:   "worker [--steps 200] [--batch 64] [--refresh 50] [--loader-workers 2] -- PYTHON …/selmix_worker.py --recipe R [options]",
		Short: "Measure selmix + the PyTorch worker against a plain PyTorch fine-tuning loop on the same recipe",
		Long: `worker runs the same recipe, model, batch, steps and evaluation passes twice:
through selmix and the reference PyTorch worker (selmix run --headless
--worker -- the command after --), and as an ordinary PyTorch loop with
DataLoader(num_workers = --loader-workers) (bench/torch_plain.py, built on the
same recipe). It prints the fine-tuning's wall time, steps/s and images/s of
each side, their ratios and, on CUDA (with nvidia-smi), the GPU's mean
utilisation and peak memory over the fine-tuning. Measure on a quiet machine.

  selmix bench worker -- /usr/bin/python3 workers/torch/selmix_worker.py \
      --recipe imagefolder --root DIR --net resnet18 --image-size 64 --weights W.pt`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 0 || len(args) < 2 || filepath.Base(args[1]) != "selmix_worker.py" {
				return app.UsageError{Err: bench.ErrWorkerScript}
			}
			if o.Steps < 1 || o.Batch < 1 || o.Refresh < 1 || o.LoaderWorkers < 0 || o.Repeat < 1 {
				return app.BadInput("want --steps, --batch, --refresh, --repeat ≥ 1 and --loader-workers ≥ 0")
			}
			if _, err := os.Stat(args[1]); err != nil {
				return app.BadInput("%s: %v", args[1], errors.Unwrap(err))
			}
			self, err := os.Executable()
			if err != nil {
				return err
			}
			if dir == "" {
				if dir, err = os.MkdirTemp("", "selmix-bench-worker-"); err != nil {
					return err
				}
				defer os.RemoveAll(dir)
			} else if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			o.Binary, o.Python, o.Script, o.Args, o.Dir, o.Log = self, args[0], args[1], args[2:], dir, cmd.ErrOrStderr()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			r, err := bench.Worker(ctx, o)
			if ctx.Err() != nil {
				return app.CodeError{Code: app.ExitSIGINT, Err: fmt.Errorf("bench worker: interrupted")}
			}
			if err != nil {
				return err
			}
			md := r.Markdown(o)
			fmt.Fprint(cmd.OutOrStdout(), md)
			if out != "" {
				return atomicfile.WriteFile(out, []byte(md))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Steps, "steps", o.Steps, "fine-tuning steps of each side")
	f.IntVar(&o.Batch, "batch", o.Batch, "pairs per step (2·batch images through the backbone)")
	f.IntVar(&o.Refresh, "refresh", o.Refresh, "steps between validation passes")
	f.IntVar(&o.LoaderWorkers, "loader-workers", o.LoaderWorkers, "DataLoader processes of the plain loop, and the worker's --loader-workers when it has it")
	f.IntVar(&o.Repeat, "repeat", o.Repeat, "sittings (plain, then selmix); the median of each side is reported")
	f.StringVar(&out, "out", "", "also write the result to `FILE.md`")
	f.StringVar(&dir, "dir", "", "keep the runs in `DIR` (default: a temporary folder, removed)")
	return cmd
}

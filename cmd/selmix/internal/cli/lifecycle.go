package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"selmix/app"
	"selmix/runs"
)

func newResumeCmd() *cobra.Command {
	var root string
	var quiet, serve bool
	cmd := &cobra.Command{
		Use:   "resume RUN",
		Short: "Continue a stopped or crashed run from its last checkpoint",
		Long: `resume continues RUN in place from its last checkpoint, re-applying the
control changes logged after it. A damaged checkpoint is named and passed
over for the one before it (none left: the run starts over). The result equals an uninterrupted run:
events already in the log are not written twice. Like run, it exits with 130
or 143 when SIGINT, SIGTERM or selmix stop interrupts it again.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := onRecordedKernel(cmd.OutOrStdout(), root, args[0]); err != nil {
				return err
			}
			return newSession(cmd.OutOrStdout(), root, quiet, serve).Resume(cmd.Context(), args[0])
		},
	}
	addRunsFlag(cmd, &root)
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only the final table")
	cmd.Flags().BoolVar(&serve, "serve", false, "serve the run's control socket so viewers can attach and selmix stop works")
	return cmd
}

func newForkCmd() *cobra.Command {
	var (
		root         string
		at           string
		sets         []string
		quiet        bool
		serve, shake bool
	)
	cmd := &cobra.Command{
		Use:   "fork RUN [--at STEP|best] [--set section.key=value ...]",
		Short: "Start a new run from a checkpoint of RUN with changed settings",
		Long: `fork starts a new run from RUN's checkpoint at or before STEP (default: the
latest; a damaged one is named and passed over for the one before it), or
with --at best from its best checkpoint (the model at the best validation ψ
of the optimized objective), with RUN's configuration overlaid by --set.
Its [finetune] hyperparameters are those in force at that checkpoint (RUN's
live changes included), and its config.toml records them with --set on top.
Changed [finetune]
hyperparameters take effect at the fork step and are logged as control
changes; the new run's record names its parent.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s := newSession(cmd.OutOrStdout(), root, quiet, serve)
			var hs *app.Handshake
			if shake {
				hs = app.NewHandshake()
				s.Created = hs.Created(root)
			}
			sel, err := app.ParseAt("--at", at)
			if err != nil {
				return err
			}
			err = s.Fork(cmd.Context(), args[0], sel, sets)
			hs.Fail(err)
			return err
		},
	}
	addRunsFlag(cmd, &root)
	cmd.Flags().BoolVar(&serve, "serve", false, "serve the new run's control socket so viewers can attach")
	cmd.Flags().BoolVar(&shake, "handshake", false, "internal: report the run id on fd 3")
	cmd.Flags().MarkHidden("handshake")
	cmd.Flags().StringVar(&at, "at", "", "fork at the checkpoint at or before `STEP`, or at best (default: the latest)")
	cmd.Flags().StringArrayVar(&sets, "set", nil, "override one configuration key: `section.key=value` (repeatable)")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only the final table")
	return cmd
}

func newReplayCmd() *cobra.Command {
	var (
		root  string
		quiet bool
	)
	cmd := &cobra.Command{
		Use:   "replay RUN",
		Short: "Re-execute a run from its config and logged control changes; check the result is identical",
		Long: `replay starts a new run with RUN's configuration (and, for a fork, from the
same parent checkpoint), applies every control change RUN logged at the step
it took effect, and compares the two: the final summary and the last
evaluation must be identical. Where the arithmetic cannot be the same (a run
made on another OpenBLAS kernel this CPU cannot run, one that predates the
record of its kernel, another thread count or worker environment) they must
agree within 1e-5 relative, and replay says why it compared so. Exit code 0
when identical or, where identity could not be expected, equal within that
tolerance; 1 when they differ.

Resume and replay first restart selmix under the OpenBLAS kernel the run was
made on (OPENBLAS_CORETYPE) where this CPU can run it and it is not the one
OpenBLAS picked; SELMIX_BLAS_KERNEL=here keeps this process's kernel.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := onRecordedKernel(cmd.OutOrStdout(), root, args[0]); err != nil {
				return err
			}
			return newSession(cmd.OutOrStdout(), root, quiet, false).Replay(cmd.Context(), args[0])
		},
	}
	addRunsFlag(cmd, &root)
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", true, "print only the final table and the comparison")
	return cmd
}

func newExportHeadCmd() *cobra.Command {
	var root, out string
	var step int
	var best bool
	cmd := &cobra.Command{
		Use:   "export-head RUN --out FILE.npz|FILE.npy [--step STEP | --best]",
		Short: "Write the fine-tuned head W (d×K) and b (K) of a run",
		Long: `export-head writes the head of RUN's last checkpoint (or the one at or before
--step, or with --best the best checkpoint: the model at the best validation
ψ of the optimized objective) in the layout heads are imported in: W of shape (d, K) and b of
shape (K,), float64. FILE.npz holds both as arrays W and b; FILE.npy writes
the pair FILE_W.npy and FILE_b.npy. In PyTorch:
    lin.weight.data = torch.from_numpy(W.T); lin.bias.data = torch.from_numpy(b)`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("step") && step < 0 {
				return app.BadInput("--step %d: want a step ≥ 0 (leave --step out for the latest checkpoint)", step)
			}
			if best && cmd.Flags().Changed("step") {
				return app.BadInput("--best and --step %d: give one (--best is the best checkpoint, --step the one at or before a step)", step)
			}
			return app.ExportHead(cmd.OutOrStdout(), runs.Root(root), args[0], app.Checkpoint{Step: step, Best: best}, out)
		},
	}
	addRunsFlag(cmd, &root)
	cmd.Flags().StringVar(&out, "out", "", "output `FILE` (.npz, or .npy for a W/b pair)")
	cmd.Flags().IntVar(&step, "step", -1, "export the checkpoint at or before `STEP` (default: the latest)")
	cmd.Flags().BoolVar(&best, "best", false, "export the best checkpoint (best validation ψ of the optimized objective)")
	cmd.MarkFlagRequired("out")
	return cmd
}

// Restart replaces this process by selmix run again with the same
// arguments under env (the binary sets it to an exec; nil in tests, which
// then go on in process).
var Restart func(env []string) error

// onRecordedKernel restarts selmix under the OpenBLAS kernel run id of
// root was made on, where that is not this process's and the CPU can run
// it (app.RestartKernel): OpenBLAS reads its kernel only when it loads.
// A run it cannot open is left to the command to report.
func onRecordedKernel(w io.Writer, root, id string) error {
	if Restart == nil {
		return nil
	}
	r, err := app.OpenRun(runs.Root(root), id)
	if err != nil {
		return nil
	}
	k := app.RestartKernel(r.Meta)
	if k == "" {
		return nil
	}
	fmt.Fprintf(w, "blas: run %s was made on OpenBLAS kernel %s: restarting selmix under it\n", r.Meta.ID, k)
	if err := Restart(app.RestartEnv(k)); err != nil {
		return fmt.Errorf("restarting under OpenBLAS kernel %s: %w", k, err)
	}
	return nil
}

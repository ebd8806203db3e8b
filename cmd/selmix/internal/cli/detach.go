package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"selmix/app"
	"selmix/core/gpu"
	"selmix/runs"
	"selmix/runs/live"
	"selmix/runs/report"
)

// liveCmd gives cmd, which takes at most one RUN, the --runs flag and
// runs do with the live run liveRun finds.
func liveCmd(cmd *cobra.Command, do func(cmd *cobra.Command, r *runs.Run) error) *cobra.Command {
	return rootCmd(cmd, func(root string, args []string) (*runs.Run, error) {
		id := ""
		if len(args) == 1 {
			id = args[0]
		}
		return app.LiveRun(root, id)
	}, do)
}

func newPsCmd() *cobra.Command {
	return listCmd("ps", "List live runs (pid, run, step, state, GPUs) and crashed ones (resume them with selmix resume)",
		func(cmd *cobra.Command, root string) error {
			return report.Live(cmd.OutOrStdout(), root, func() ([]gpu.Stat, error) { return gpu.Query(cmd.Context()) })
		})
}

func newStopCmd() *cobra.Command {
	return liveCmd(&cobra.Command{
		Use:   "stop RUN",
		Short: "Stop a live run cleanly (final checkpoint, summary and plots are written)",
		Args:  cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, r *runs.Run) error {
		ctx, code, stop := app.SignalContext(cmd.Context())
		defer stop()
		err := live.Stop(ctx, cmd.OutOrStdout(), r)
		return app.Interrupted(err, code, fmt.Sprintf("interrupted while waiting for run %s to stop; it may still stop (selmix ps)", r.Meta.ID))
	})
}

package cli

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"selmix/app"
	"selmix/runs"
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
	return listCmd("ps", "List live runs (pid, run, step, state) and crashed ones (resume them with selmix resume)",
		func(cmd *cobra.Command, root string) error { return listLive(cmd.OutOrStdout(), root) })
}

func listLive(w io.Writer, root string) error {
	rs, err := runs.List(root)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PID\tRUN\tNAME\tSTEP\tSTATE")
	n := 0
	for _, r := range rs {
		st := r.EffectiveStatus()
		if !r.Live && st != runs.StatusCrashed {
			continue
		}
		pid := "-"
		if r.Live {
			pid = fmt.Sprint(r.Pid)
		}
		printText(tw, "%s\t%s\t%s\t%d\t%s\n", pid, r.Meta.ID, r.Meta.Name, r.Meta.Steps, st)
		n++
	}
	if n == 0 {
		fmt.Fprintf(w, "no live or crashed runs in %s\n", root)
		return nil
	}
	return tw.Flush()
}

func newStopCmd() *cobra.Command {
	return liveCmd(&cobra.Command{
		Use:   "stop RUN",
		Short: "Stop a live run cleanly (final checkpoint, summary and plots are written)",
		Args:  cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, r *runs.Run) error {
		return app.StopLive(cmd.Context(), cmd.OutOrStdout(), r)
	})
}

package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"selmix/runs"
	"selmix/runs/live"
	"selmix/runs/record"
	"selmix/runs/report"
)

func newAttachCmd() *cobra.Command {
	var (
		keysPath string
		follow   bool
	)
	cmd := liveCmd(&cobra.Command{
		Use:   "attach [RUN] [--follow]",
		Short: "Re-attach to a live run (the most recent one by default)",
		Long: `attach connects to a run living in its own process. The workbench first
replays the run's event log, so every pane shows its history, then follows
the live run. Quitting asks whether to stop the run or detach from it.
--follow prints one line per refresh instead (for scripts), until the run ends.`,
		Args: cobra.MaximumNArgs(1),
	}, func(cmd *cobra.Command, r *runs.Run) error {
		if follow {
			return followRun(cmd.Context(), cmd.OutOrStdout(), r)
		}
		sc, err := newScreens(cmd, keysPath)
		if err != nil {
			return err
		}
		return screenExit(sc.BrowseAfter(cmd.Context(), filepath.Dir(r.Dir), sc.Attach(cmd.Context(), r)))
	})
	addKeysFlag(cmd, &keysPath)
	cmd.Flags().BoolVar(&follow, "follow", false, "print progress lines instead of opening the workbench")
	return cmd
}

// followRun prints a live run's progress until it ends or ctx does.
func followRun(ctx context.Context, w io.Writer, r *runs.Run) error {
	ctx, cancel := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer cancel()
	cl, err := live.DialWait(ctx, r.Dir, live.Hello{Matrices: followMatrices(ctx, r)})
	if err != nil {
		return err
	}
	defer cl.Close()
	fmt.Fprintf(w, "attached to run %s (%s); Ctrl-C detaches, the run goes on\n", r.Meta.ID, r.Dir)
	report.Progress(ctx, w, cl, false)
	if err := cl.Err(); err != nil {
		return fmt.Errorf("run %s: %w", r.Meta.ID, err)
	}
	if ctx.Err() != nil {
		fmt.Fprintf(w, "detached; run %s goes on\n", r.Meta.ID)
	}
	return nil
}

// followMatrices says whether attach --follow asks for P with every
// refresh, for the "P: n pairs, top i→j" part the headless lines have:
// up to K = 100 classes (K² numbers a refresh), as the run's log says K.
// A run that has just started may not have logged its start yet: K is
// waited for, up to startWait.
func followMatrices(ctx context.Context, r *runs.Run) bool {
	deadline := time.Now().Add(startWait)
	for {
		h, err := record.Load(r)
		if err != nil {
			return false
		}
		if len(h.Starts) > 0 {
			k := h.Starts[len(h.Starts)-1].K
			return k > 0 && k <= maxFollowK
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// startWait is how long attach --follow waits for a new run's start.
const startWait = 10 * time.Second

// maxFollowK is the largest K for which attach --follow shows P's part.
const maxFollowK = 100

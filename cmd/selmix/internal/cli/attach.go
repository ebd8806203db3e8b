package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"selmix/app"
	"selmix/runs"
	"selmix/runs/live"
	"selmix/runs/record"
	"selmix/runs/report"
	"selmix/tui"
	"selmix/viz"
)

// attachWorkbenchTo opens the workbench on a run living in another
// process: it replays the run's log so every pane has its history, then
// follows the live snapshots. The run outlives the workbench unless the
// user asks to stop it.
func attachWorkbenchTo(cmd *cobra.Command, r *runs.Run, keysPath string) error {
	km, kpath, err := loadKeys(keysPath)
	if err != nil {
		return err
	}
	if err := needTerminal(cmd.OutOrStdout()); err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(cmd.Context(), syscall.SIGTERM)
	defer cancel()
	// Subscribe before reading the log: what happens in between arrives
	// twice and is dropped below, never missed.
	cl, err := live.DialWait(r.Dir, true)
	if err != nil {
		return err
	}
	defer cl.Close()
	h, err := record.Load(r)
	if err != nil {
		return err
	}
	st := live.ReplayThenFollow(ctx, h, cl)
	root := filepath.Dir(r.Dir)
	m := tui.New(tui.Options{
		Info: tui.RunInfo(r, h), Ctl: cl, Keys: km, KeysPath: kpath, Color: os.Getenv("NO_COLOR") == "", Attached: true,
		Fork: forkAction(root, r.Meta.ID), Export: exportAction(r.Dir), LoadMatrices: tui.LoadMatrices(h),
	})
	if err := tui.Show(ctx, m, st); err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	if m.Detached() || !m.Quit() {
		fmt.Fprintf(w, "detached; run %s goes on (selmix attach %s · selmix stop %s)\n", r.Meta.ID, r.Meta.ID, r.Meta.ID)
		if m.Browse() {
			return errBrowse
		}
		return nil
	}
	if m.State() != tui.Finished && m.State() != tui.Failed {
		if err := live.Stop(cmd.Context(), w, r); err != nil {
			return err
		}
	}
	return printRecordedSummary(w, r)
}

// printRecordedSummary prints the before/after table from the run's log.
func printRecordedSummary(w io.Writer, r *runs.Run) error {
	h, err := record.Load(r)
	if err != nil {
		return err
	}
	report.Summary(w, h.Final, h.SessionStart())
	fmt.Fprintf(w, "run %s: %s\n", r.Meta.ID, r.Dir)
	return nil
}

// forkAction forks run id of root at a step or its best checkpoint, with the overrides chosen
// in the workbench's fork form, into a new background run: what f does
// in the workbench. Forks start one at a time, so each new run's name is
// chosen after the previous fork's run exists (forkRun picks a free one).
func forkAction(root, id string) func(at string, sets []string) (string, error) {
	var mu sync.Mutex
	return func(at string, sets []string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		nid, _, err := app.SpawnForkDetached(root, id, at, sets)
		if err != nil {
			return "", fmt.Errorf("fork: %v", err)
		}
		return fmt.Sprintf("forked as run %s, running in the background: selmix attach %s", nid, nid), nil
	}
}

// exportAction writes the run's figures into its plots/ from what is on
// disk now: what x does in the workbench.
func exportAction(dir string) func() (string, error) {
	return func() (string, error) {
		var buf bytes.Buffer
		if err := viz.ExportPlots(&buf, dir); err != nil {
			return "", fmt.Errorf("export: %v", err)
		}
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		return lines[len(lines)-1], nil
	}
}

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
		return browseAfter(cmd, filepath.Dir(r.Dir), keysPath, attachWorkbenchTo(cmd, r, keysPath))
	})
	addKeysFlag(cmd, &keysPath)
	cmd.Flags().BoolVar(&follow, "follow", false, "print progress lines instead of opening the workbench")
	return cmd
}

// followRun prints a live run's progress until it ends or ctx does.
func followRun(ctx context.Context, w io.Writer, r *runs.Run) error {
	ctx, cancel := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer cancel()
	cl, err := live.DialWait(r.Dir, false)
	if err != nil {
		return err
	}
	defer cl.Close()
	fmt.Fprintf(w, "attached to run %s (%s); Ctrl-C detaches, the run goes on\n", r.Meta.ID, r.Dir)
	report.Progress(ctx, w, cl, false)
	if err := cl.Err(); err != nil {
		return err
	}
	if ctx.Err() != nil {
		fmt.Fprintf(w, "detached; run %s goes on\n", r.Meta.ID)
	}
	return nil
}

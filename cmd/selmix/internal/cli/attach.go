package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"selmix/core/train"
	"selmix/runs"
	"selmix/runs/live"
	"selmix/runs/record"
	"selmix/tui"
	"selmix/tui/history"
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
	cl, err := dialLive(r, true)
	if err != nil {
		return err
	}
	defer cl.Close()
	h, err := record.Load(r)
	if err != nil {
		return err
	}
	info := history.Info{ID: r.Meta.ID, Name: r.Meta.Name, Dir: r.Dir, Worker: r.WorkerCommand()}
	if len(h.Starts) > 0 {
		info.ClassNames, info.TrainCounts = h.Starts[0].ClassNames, h.Starts[0].TrainCounts
	}
	st := replayThenFollow(ctx, h, cl)
	root := filepath.Dir(r.Dir)
	m := tui.New(tui.Options{
		Info: info, Ctl: cl, Keys: km, KeysPath: kpath, Color: os.Getenv("NO_COLOR") == "", Attached: true,
		Fork: forkAction(root, r.Meta.ID), Export: exportAction(r.Dir), LoadMatrices: loadMatrices(h),
	})
	if err := showProgram(ctx, m, st); err != nil {
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
		if err := stopLive(cmd.Context(), w, r); err != nil {
			return err
		}
	}
	return printRecordedSummary(w, r)
}

// stopLive asks a live run to stop and waits until it confirms.
func stopLive(ctx context.Context, w io.Writer, r *runs.Run) error {
	cl, err := dialLive(r, false)
	if errors.Is(err, live.ErrNotLive) {
		return nil // it ended meanwhile
	}
	if err != nil {
		return err
	}
	defer cl.Close()
	cl.Send(train.Control{Op: train.OpStop})
	last, final := -1, false
	for {
		s, ok := cl.Next(ctx)
		if !ok {
			break
		}
		last = s.Step
		final = final || s.Kind == train.KindFinal
	}
	if !final {
		// A run that ended on its own as we connected closes the
		// connection without a word: its record says how it ended.
		if st, ok := endedStatus(r); ok {
			fmt.Fprintf(w, "run %s had already ended (%s)\n", r.Meta.ID, st)
			return nil
		}
		return fmt.Errorf("run %s: connection closed before the run confirmed it stopped (last step %d)", r.Meta.ID, last)
	}
	fmt.Fprintf(w, "run %s stopped at step %d\n", r.Meta.ID, last)
	return nil
}

// printRecordedSummary prints the before/after table from the run's log.
func printRecordedSummary(w io.Writer, r *runs.Run) error {
	h, err := record.Load(r)
	if err != nil {
		return err
	}
	printSummary(w, h.Final, h.SessionStart())
	fmt.Fprintf(w, "run %s: %s\n", r.Meta.ID, r.Dir)
	return nil
}

// forkAction forks run id of root at a step, with the overrides chosen
// in the workbench's fork form, into a new background run: what f does
// in the workbench. Forks start one at a time, so each new run's name is
// chosen after the previous fork's run exists (forkRun picks a free one).
func forkAction(root, id string) func(step int, sets []string) (string, error) {
	var mu sync.Mutex
	return func(step int, sets []string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		nid, _, err := spawnForkDetached(root, id, step, sets)
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
		if err := autoExport(&buf, dir); err != nil {
			return "", fmt.Errorf("export: %v", err)
		}
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		return lines[len(lines)-1], nil
	}
}

// replayThenFollow is a stream of the run's logged history followed by the
// live snapshots that are newer than it.
func replayThenFollow(ctx context.Context, h *record.History, cl *live.Client) *train.Stream {
	st := train.NewStream()
	lastRefresh, lastCtl, atLast := -1, -1, 0
	for _, s := range record.Snapshots(h) {
		st.Publish(s)
		switch {
		case s.Kind == train.KindRefresh:
			lastRefresh = s.Step
		case s.Kind == train.KindControl && s.Step == lastCtl:
			atLast++
		case s.Kind == train.KindControl:
			lastCtl, atLast = s.Step, 1
		}
	}
	go func() {
		defer st.Close()
		for {
			s, ok := cl.Next(ctx)
			if !ok {
				if err := cl.Err(); err != nil {
					st.Publish(train.Snapshot{Kind: train.KindError, State: train.Failed, Err: err.Error()})
				}
				return
			}
			switch {
			case s.Kind == train.KindRefresh && s.Step <= lastRefresh:
				continue
			case s.Kind == train.KindControl && s.Step < lastCtl:
				continue
			case s.Kind == train.KindControl && s.Step == lastCtl && atLast > 0:
				atLast-- // logged already
				continue
			}
			st.Publish(s)
		}
	}()
	return st
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
	cl, err := dialLive(r, false)
	if err != nil {
		return err
	}
	defer cl.Close()
	fmt.Fprintf(w, "attached to run %s (%s); Ctrl-C detaches, the run goes on\n", r.Meta.ID, r.Dir)
	printProgress(ctx, w, cl, false)
	if err := cl.Err(); err != nil {
		return err
	}
	if ctx.Err() != nil {
		fmt.Fprintf(w, "detached; run %s goes on\n", r.Meta.ID)
	}
	return nil
}

// endedStatus waits a little for r's process to let go of it and returns
// its recorded status once it has.
func endedStatus(r *runs.Run) (string, bool) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		now, err := runs.Open(filepath.Dir(r.Dir), r.Meta.ID)
		if err != nil {
			return "", false
		}
		if !now.Live {
			st := now.EffectiveStatus()
			return st, st != runs.StatusRunning
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "", false
}

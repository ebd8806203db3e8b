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

	"selmix/app"
	"selmix/core/loop"
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
--follow prints one line per refresh instead (for scripts), until the run ends,
then a last line that says how it ended. Exit codes with --follow:
  0    the run finished (its line as the run prints it: "run ID finished at
       step N: DIR"), or Ctrl-C detached (the run goes on)
  143  the run was stopped (selmix stop, a signal, the workbench); it is
       resumable: selmix resume RUN
  1    the run failed, its trainer could not go on, or its process died
       (crashed); the line on stderr says which`,
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
	end := &followEnd{src: cl}
	report.Progress(ctx, w, end, false)
	if err := cl.Err(); err != nil {
		return fmt.Errorf("run %s: %w", r.Meta.ID, err)
	}
	if ctx.Err() != nil {
		fmt.Fprintf(w, "detached; run %s goes on\n", r.Meta.ID)
		return nil
	}
	return end.result(w, r.Meta.ID, r.Dir)
}

// followEnd is a run's snapshots as attach --follow prints them, noting
// the last one and the one that ended the run (final or error).
type followEnd struct {
	src  loop.Source
	last loop.Snapshot
	end  *loop.Snapshot
}

func (f *followEnd) Next(ctx context.Context) (loop.Snapshot, bool) {
	s, ok := f.src.Next(ctx)
	if ok {
		f.last = s
		if s.Kind == loop.KindFinal || s.Kind == loop.KindError {
			e := s
			f.end = &e
		}
	}
	return s, ok
}

// result is how attach --follow ends once run id's stream has (its folder
// dir): as the run itself ends. Finished: its line, exit 0. Stopped (selmix
// stop, a signal, the workbench): the stopped line, exit 143
// (app.ExitSIGTERM, whatever stopped it). Failed, its trainer unable to
// go on, or its process gone without a final word (crashed): the reason,
// exit 1.
func (f *followEnd) result(w io.Writer, id, dir string) error {
	e := f.end
	switch {
	case e == nil:
		return fmt.Errorf("run %s crashed: its process ended after step %d without a final record; `selmix resume %s` continues it from its last checkpoint", id, f.last.Step, id)
	case e.Kind == loop.KindError:
		return fmt.Errorf("run %s failed at step %d: %s", id, e.Step, e.Err)
	case e.Summary == nil:
		// A trainer that halted (out of memory): the run says why in its
		// output.
		return fmt.Errorf("run %s stopped at step %d: its trainer could not go on (%s says why); `selmix resume %s` continues it",
			id, e.Step, filepath.Join(dir, "output.log"), id)
	case e.State == loop.Finished:
		sum := *e.Summary
		// The wire does not carry α: the final snapshot's hyperparameters do.
		sum.Alpha = e.Hyper.Params(sum.ValAfter.K, 0).Alpha
		fmt.Fprintln(w, app.FinishedLine(id, dir, &sum))
		return nil
	}
	return &app.StoppedError{ID: id, Step: e.Step, Code: app.ExitSIGTERM}
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

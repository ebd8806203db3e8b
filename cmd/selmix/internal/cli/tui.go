package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"selmix/app"
	"selmix/core/loop"
	"selmix/core/train"
	"selmix/runs"
	"selmix/tui/keys"
	"selmix/tui/runstate"
	"selmix/tui/workbench"
)

type tuiFlags struct {
	startFlags
	keys       string
	foreground bool
}

func addForegroundFlag(cmd *cobra.Command, fg *bool) {
	cmd.Flags().BoolVar(fg, "foreground", false, "train in this process (quitting stops the run) instead of in a background process the workbench attaches to")
}

func addKeysFlag(cmd *cobra.Command, path *string) {
	cmd.Flags().StringVar(path, "keys", "", "key bindings `FILE` (TOML, a line per action: pause = \"p\" or quit = [\"q\", \"ctrl+c\"]; actions: "+
		strings.Join(keys.Actions(), ", ")+"; README, \"Key bindings\"; default $XDG_CONFIG_HOME/selmix/keys.toml if present)")
}

// attachWorkbench makes bare `selmix` open the workbench on the built-in
// experiment and adds the tui and open commands.
func attachWorkbench(root *cobra.Command) {
	var f tuiFlags
	root.Args = withSuggestions(cobra.NoArgs)
	root.RunE = func(cmd *cobra.Command, _ []string) error { return runWorkbench(cmd, f) }
	f.add(root)
	addKeysFlag(root, &f.keys)
	addForegroundFlag(root, &f.foreground)
	root.AddCommand(newTUICmd(), newOpenCmd())
}

func newTUICmd() *cobra.Command {
	var f tuiFlags
	cmd := &cobra.Command{
		Use:   "tui [--config FILE] [--set section.key=value ...] [--worker -- CMD ARGS...]",
		Short: "Fine-tune in the terminal workbench (bare `selmix` does this on the built-in experiment)",
		Long: `tui starts a run and shows it live: per-class recall and coverage, the gain
matrix G and mixup distribution P, s and the Lagrange multipliers, every
objective over time and an event log. Pause, single-step, scale s, change the
objective, the policy or any hyperparameter while it runs (press ? for keys).
Quitting stops the run; it stays recorded in the runs root.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.takeWorker(cmd, args); err != nil {
				return err
			}
			return runWorkbench(cmd, f)
		},
	}
	f.add(cmd)
	addKeysFlag(cmd, &f.keys)
	addForegroundFlag(cmd, &f.foreground)
	addWorkerFlag(cmd, &f.worker)
	return cmd
}

func newOpenCmd() *cobra.Command {
	var f tuiFlags
	var print string
	cmd := &cobra.Command{
		Use:   "open RUN [--print WxH]",
		Short: "View a recorded run in the workbench (read-only)",
		Long: `open shows a recorded run in the workbench, read-only. --print WxH prints
the workbench's first full screen (its history and the last G and P loaded)
at that size as text and exits, without a terminal: for scripts, documents
and measuring how fast a run opens.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root := runs.Root(f.runs)
			if print != "" {
				var w, h int
				if _, err := fmt.Sscanf(print, "%dx%d", &w, &h); err != nil || w < 1 || h < 1 {
					return app.BadInput("--print %q: want WIDTHxHEIGHT, e.g. 160x50", print)
				}
				r, hist, err := app.OpenHistory(root, args[0])
				if err != nil {
					return err
				}
				m, snaps := workbench.Recorded(r, hist, workbench.Options{Color: os.Getenv("NO_COLOR") == ""})
				_, err = fmt.Fprintln(cmd.OutOrStdout(), m.FirstScreen(snaps, w, h))
				return err
			}
			sc, err := newScreens(cmd, f.keys)
			if err != nil {
				return err
			}
			r, hist, err := app.OpenHistory(root, args[0])
			if err != nil {
				return err
			}
			return screenExit(sc.BrowseAfter(cmd.Context(), root, sc.Recorded(cmd.Context(), r, hist)))
		},
	}
	addRunsFlag(cmd, &f.runs)
	addKeysFlag(cmd, &f.keys)
	cmd.Flags().StringVar(&print, "print", "", "print the first screen at `WxH` and exit")
	return cmd
}

// runWorkbench starts a run with the workbench as its viewer.
func runWorkbench(cmd *cobra.Command, f tuiFlags) error {
	sc, err := newScreens(cmd, f.keys)
	if err != nil {
		return err
	}
	c, err := loadConfig(f.config, f.sets)
	if err != nil {
		return err
	}
	env, err := f.gpuEnv(cmd)
	if err != nil {
		return err
	}
	if !f.foreground {
		// The run lives in its own process; the workbench is a client
		// that may detach and come back.
		fmt.Fprintln(cmd.OutOrStdout(), "starting the run in the background…")
		sv := newStartupView(cmd.OutOrStdout(), isTerminal(cmd.OutOrStdout()))
		id, _, err := app.SpawnDetachedLines(f.runs, f.config, f.sets, f.gpus, sv.line)
		sv.done()
		if err != nil {
			return err
		}
		r, err := app.OpenRun(runs.Root(f.runs), id)
		if err != nil {
			return err
		}
		return screenExit(sc.BrowseAfter(cmd.Context(), runs.Root(f.runs), sc.Attach(cmd.Context(), r)))
	}
	// Bubble Tea owns the terminal while it runs: what the run prints
	// meanwhile is held and printed after the workbench closes.
	out := &workbench.HoldWriter{W: cmd.OutOrStdout()}
	view := func(ctx context.Context, eng *train.Engine, st *loop.Stream, vi app.ViewInfo) error {
		out.Hold()
		defer out.Release()
		info := runstate.Info{ID: vi.ID, Name: vi.Name, Dir: vi.Dir, ClassNames: vi.ClassNames, TrainCounts: vi.TrainCounts,
			Worker: strings.Join(vi.Config.Worker.Command, " ")}
		return workbench.Show(ctx, workbench.New(sc.Options(info, eng, false)), st)
	}
	s := newSession(out, f.runs, false, false)
	s.View = view
	s.WorkerEnv = env
	return s.Start(cmd.Context(), c, app.Origin{})
}

// loadKeys is keys.Resolve; a bad keys file is bad input.
func loadKeys(path string) (*keys.Map, string, error) {
	km, kpath, err := keys.Resolve(path)
	if err != nil {
		return nil, "", app.UsageError{Err: err}
	}
	return km, kpath, nil
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

// needTerminal refuses to draw the workbench into a pipe or a file.
func needTerminal(w io.Writer) error {
	if !isTerminal(w) {
		return app.BadInput("the workbench needs a terminal; use `selmix run --headless` in scripts")
	}
	return nil
}

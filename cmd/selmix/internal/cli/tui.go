package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"selmix/app"
	"selmix/core/train"
	"selmix/runs"
	"selmix/runs/record"
	"selmix/tui"
	"selmix/tui/history"
	"selmix/tui/keys"
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
	cmd.Flags().StringVar(path, "keys", "", "key bindings `FILE` (TOML; default $XDG_CONFIG_HOME/selmix/keys.toml if present)")
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
			if print != "" {
				var w, h int
				if _, err := fmt.Sscanf(print, "%dx%d", &w, &h); err != nil || w < 1 || h < 1 {
					return app.BadInput("--print %q: want WIDTHxHEIGHT, e.g. 160x50", print)
				}
				return printRecorded(cmd.OutOrStdout(), runs.Root(f.runs), args[0], w, h)
			}
			return browseAfter(cmd, runs.Root(f.runs), f.keys, openRecorded(cmd, runs.Root(f.runs), args[0], f.keys))
		},
	}
	addRunsFlag(cmd, &f.runs)
	addKeysFlag(cmd, &f.keys)
	cmd.Flags().StringVar(&print, "print", "", "print the first screen at `WxH` and exit")
	return cmd
}

// recorded loads run id of root as the read-only workbench shows it: its
// history as snapshots, and how to load the last G and P.
func recorded(root, id string, km *keys.Map, kpath string) (*tui.Model, []train.Snapshot, error) {
	run, err := runs.Open(root, id)
	if err != nil {
		return nil, nil, app.UsageError{Err: err}
	}
	h, err := record.Load(run)
	if err != nil {
		return nil, nil, err
	}
	info := history.RunInfo{ID: run.Meta.ID, Name: run.Meta.Name, Dir: run.Dir, ReadOnly: true, Worker: run.WorkerCommand()}
	if len(h.Starts) > 0 {
		info.ClassNames, info.TrainCounts = h.Starts[0].ClassNames, h.Starts[0].TrainCounts
	}
	m := tui.New(tui.Options{Info: info, Keys: km, KeysPath: kpath, Color: os.Getenv("NO_COLOR") == "", LoadMatrices: loadMatrices(h)})
	return m, record.Snapshots(h), nil
}

// printRecorded renders what open shows first, after the history and the
// last G and P are in, as text.
func printRecorded(w io.Writer, root, id string, width, height int) error {
	m, snaps, err := recorded(root, id, keys.Default(), "")
	if err != nil {
		return err
	}
	m.Update(tea.WindowSizeMsg{Width: width, Height: height})
	m.Update(tui.SnapshotsMsg(snaps))
	m.Update(tui.ClosedMsg{})
	if load := m.Init(); load != nil {
		m.Update(load())
	}
	_, err = fmt.Fprintln(w, m.Render())
	return err
}

// openRecorded shows run id of root in the read-only workbench.
func openRecorded(cmd *cobra.Command, root, id, keysPath string) error {
	km, kpath, err := loadKeys(keysPath)
	if err != nil {
		return err
	}
	if err := needTerminal(cmd.OutOrStdout()); err != nil {
		return err
	}
	m, snaps, err := recorded(root, id, km, kpath)
	if err != nil {
		return err
	}
	st := train.NewStream()
	for _, s := range snaps {
		st.Publish(s)
	}
	st.Close()
	if err := showProgram(cmd.Context(), m, st); err != nil {
		return err
	}
	if m.Browse() {
		return errBrowse
	}
	return nil
}

// runWorkbench starts a run with the workbench as its viewer.
func runWorkbench(cmd *cobra.Command, f tuiFlags) error {
	km, kpath, err := loadKeys(f.keys)
	if err != nil {
		return err
	}
	if err := needTerminal(cmd.OutOrStdout()); err != nil {
		return err
	}
	c, err := loadConfig(f.config, f.sets)
	if err != nil {
		return err
	}
	if !f.foreground {
		// The run lives in its own process; the workbench is a client
		// that may detach and come back.
		fmt.Fprintln(cmd.OutOrStdout(), "starting the run in the background…")
		id, _, err := app.SpawnDetached(f.runs, f.config, f.sets)
		if err != nil {
			return err
		}
		r, err := app.OpenRun(runs.Root(f.runs), id)
		if err != nil {
			return err
		}
		return browseAfter(cmd, runs.Root(f.runs), f.keys, attachWorkbenchTo(cmd, r, f.keys))
	}
	// Bubble Tea owns the terminal while it runs: what the run prints
	// meanwhile is held and printed after the workbench closes.
	out := &holdWriter{w: cmd.OutOrStdout()}
	view := func(ctx context.Context, eng *train.Engine, st *train.Stream, vi app.ViewInfo) error {
		out.hold()
		defer out.release()
		m := tui.New(tui.Options{
			Info: history.RunInfo{ID: vi.ID, Name: vi.Name, Dir: vi.Dir, ClassNames: vi.ClassNames, TrainCounts: vi.TrainCounts,
				Worker: strings.Join(vi.Config.Worker.Command, " ")},
			Ctl: eng, Keys: km, KeysPath: kpath, Color: os.Getenv("NO_COLOR") == "",
			Fork: forkAction(filepath.Dir(vi.Dir), vi.ID), Export: exportAction(vi.Dir),
		})
		return showProgram(ctx, m, st)
	}
	s := newSession(out, f.runs, false, false)
	s.View = view
	return s.Start(cmd.Context(), c, app.Origin{})
}

// showProgram runs the Bubble Tea program over m while one goroutine
// feeds it st's snapshots; it returns when the user quits.
func showProgram(ctx context.Context, m *tui.Model, st *train.Stream) error {
	if ctx == nil {
		ctx = context.Background()
	}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Snapshots arrive at most every tui.UIRate; a faster frame clock
	// would only wake the CPU that training needs.
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithFPS(20))
	go tui.Follow(fctx, st, p.Send, tui.UIRate)
	_, err := p.Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil // interrupted by a signal: the run stops as for q
	}
	return err
}

func loadKeys(path string) (*keys.Map, string, error) {
	if path == "" {
		def := keys.DefaultPath()
		if def == "" {
			return keys.Default(), "", nil
		}
		km, err := keys.Load(def, true)
		if err != nil {
			return nil, "", app.UsageError{Err: err}
		}
		return km, def, nil
	}
	km, err := keys.Load(path, false)
	if err != nil {
		return nil, "", app.UsageError{Err: err}
	}
	return km, path, nil
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

// holdWriter passes writes through, except while held, when it buffers
// them until release.
type holdWriter struct {
	mu   sync.Mutex
	w    io.Writer
	buf  bytes.Buffer
	held bool
}

func (h *holdWriter) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held {
		return h.buf.Write(p)
	}
	return h.w.Write(p)
}

func (h *holdWriter) hold() {
	h.mu.Lock()
	h.held = true
	h.mu.Unlock()
}

func (h *holdWriter) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held = false
	if h.buf.Len() > 0 {
		h.w.Write(h.buf.Bytes())
		h.buf.Reset()
	}
}

// loadMatrices reads G and P of the last refresh of h, for a workbench
// that shows h's snapshots (which come without them) first. When the run
// did not keep that refresh's (record.matrices_every), it shows the
// latest it kept, and says so.
func loadMatrices(h *record.History) func() tui.MatricesMsg {
	return func() tui.MatricesMsg {
		n := len(h.Refreshes)
		if n == 0 {
			return tui.MatricesMsg{}
		}
		last := h.Refreshes[n-1].Step
		i := h.LastMatrices()
		if i < 0 {
			return tui.MatricesMsg{Note: "G and P: no refresh of this run kept them (record.matrices_every)"}
		}
		G, P, err := h.Matrices(i)
		if err != nil {
			return tui.MatricesMsg{Err: err}
		}
		msg := tui.MatricesMsg{Step: last, G: G, P: P}
		if at := h.Refreshes[i].Step; at != last {
			msg.Note = fmt.Sprintf("G and P shown are from step %d, the last refresh that kept them (record.matrices_every)", at)
		}
		return msg
	}
}

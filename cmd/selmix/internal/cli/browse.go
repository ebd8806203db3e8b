package cli

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	tea "charm.land/bubbletea/v2"
	"github.com/spf13/cobra"

	"selmix/app"
	"selmix/tui/browser"
	"selmix/tui/compare"
	"selmix/tui/pane"
	"selmix/tui/style"
)

// browseRuns shows the runs browser over root. Enter opens the chosen
// run in the workbench (attached while it runs, read-only once it has
// ended), c compares the marked runs; quitting either comes back to the
// list, with its filter, sort and marks as they were.
func browseRuns(cmd *cobra.Command, root, keysPath string) error {
	km, _, err := loadKeys(keysPath)
	if err != nil {
		return err
	}
	if err := needTerminal(cmd.OutOrStdout()); err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(cmd.Context(), syscall.SIGTERM)
	defer cancel()
	pc := &pane.Context{Theme: style.NewTheme(os.Getenv("NO_COLOR") == ""), Keys: km}
	m := browser.New(pc, root)
	for {
		if err := runProgram(ctx, m); err != nil {
			return err
		}
		act, ids := m.Chosen()
		err = nil
		switch act {
		case browser.None:
			return nil
		case browser.Open:
			err = openOrAttach(cmd, root, ids[0], keysPath)
		case browser.Compare:
			cm := compare.New(pc, ids, func(ids []string) ([]*compare.RunSeries, error) { return compare.Load(root, ids) })
			if err := runProgram(ctx, cm); err != nil {
				return err
			}
		}
		if ctx.Err() != nil {
			return errTerminated
		}
		if errors.Is(err, errBrowse) {
			err = nil // the workbench was left for the list: here it is
		}
		if err != nil {
			// The list comes back and says what went wrong.
			m.SetNote(err.Error())
		}
	}
}

// A signal ends the browser with the code a run stopped by it has.
var (
	errInterrupted = app.CodeError{Code: app.ExitSIGINT, Err: errors.New("interrupted")}
	errTerminated  = app.CodeError{Code: app.ExitSIGTERM, Err: errors.New("terminated")}
)

// errBrowse says the user left the workbench for the runs browser
// (tui.Model.Browse); the command that opened the workbench opens it.
var errBrowse = errors.New("to the runs browser")

// browseAfter opens the runs browser over root when err is errBrowse,
// and passes any other result through.
func browseAfter(cmd *cobra.Command, root, keysPath string, err error) error {
	if errors.Is(err, errBrowse) {
		return browseRuns(cmd, root, keysPath)
	}
	return err
}

// runProgram runs one full-screen program over m; a signal that ended
// it is errInterrupted (SIGINT) or errTerminated (SIGTERM).
func runProgram(ctx context.Context, m tea.Model) error {
	_, err := tea.NewProgram(m, tea.WithContext(ctx)).Run()
	switch {
	case errors.Is(err, tea.ErrInterrupted):
		return errInterrupted
	case ctx.Err() != nil:
		return errTerminated
	}
	return err
}

// openOrAttach shows run id in the workbench: attached while a process
// runs it, read-only otherwise (selmix attach, selmix open).
func openOrAttach(cmd *cobra.Command, root, id, keysPath string) error {
	r, err := app.OpenRun(root, id)
	if err != nil {
		return err
	}
	if r.Live {
		return attachWorkbenchTo(cmd, r, keysPath)
	}
	return openRecorded(cmd, root, id, keysPath)
}

package cli

import (
	"errors"
	"os"

	"github.com/spf13/cobra"

	"selmix/app"
	"selmix/app/sweepexec"
	"selmix/core/train"
	"selmix/tui/screen"
	"selmix/viz"
)

// newScreens are the workbench's screens for cmd, with the key bindings
// of the file at keysPath (loadKeys); they need a terminal.
func newScreens(cmd *cobra.Command, keysPath string) (*screen.Screens, error) {
	km, kpath, err := loadKeys(keysPath)
	if err != nil {
		return nil, err
	}
	if err := needTerminal(cmd.OutOrStdout()); err != nil {
		return nil, err
	}
	fork := func(root, id, at string, sets []string) (string, error) {
		nid, _, err := app.SpawnForkDetached(root, id, at, sets)
		return nid, err
	}
	return &screen.Screens{Out: cmd.OutOrStdout(), Keys: km, KeysPath: kpath, Color: os.Getenv("NO_COLOR") == "", Fork: fork, Export: viz.ExportPlotsTo, Forecast: train.Preview, Cluster: sweepexec.Commands{}}, nil
}

// screenExit gives a screen that a signal ended the exit code of a run
// stopped by it.
func screenExit(err error) error {
	switch {
	case errors.Is(err, screen.ErrInterrupted):
		return app.CodeError{Code: app.ExitSIGINT, Err: err}
	case errors.Is(err, screen.ErrTerminated):
		return app.CodeError{Code: app.ExitSIGTERM, Err: err}
	}
	return err
}

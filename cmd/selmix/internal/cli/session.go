package cli

import (
	"fmt"
	"io"
	"os"

	"selmix/app"
	"selmix/internal/memguard"
	"selmix/runs"
	"selmix/runs/report"
	"selmix/viz"
)

// newSession is the app.Session of a command that writes to w and records
// runs in root (as given: "" for the default): progress lines and the
// final table printed here, figures drawn at a run's end, a worker's
// stderr kept in its run's folder.
func newSession(w io.Writer, root string, quiet, serve bool) *app.Session {
	return &app.Session{
		Root: root, Out: w, Quiet: quiet, Serve: serve,
		Progress: report.Progress,
		Summary:  report.Summary,
		Plots: func(w io.Writer, dir string) error {
			return boundFigures(w, "the figures of "+dir+" (the run itself is whole)", func() error { return viz.ExportPlots(w, dir) })
		},
		WorkerLog: func(dir string, note func(string)) (func(string), func()) {
			l := runs.OpenWorkerLog(dir, runs.WorkerLogHead, runs.WorkerLogTail, note)
			return l.Line, l.Close
		},
	}
}

// boundFigures runs draw within memguard's bound: past it, one line
// naming what was drawn on w, and the process exits 1 (figures hold
// nothing that is not on disk already).
func boundFigures(w io.Writer, what string, draw func() error) error {
	stop := memguard.Start(memguard.Limit(), func(used uint64) {
		fmt.Fprintf(w, "selmix: %s: drawing took %d MiB, more than its bound of %d MiB: stopped (please report it with the command)\n",
			what, used>>20, memguard.Limit()>>20)
		os.Exit(app.ExitFailure)
	})
	defer stop()
	return draw()
}

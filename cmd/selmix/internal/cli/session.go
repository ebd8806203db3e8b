package cli

import (
	"io"

	"selmix/app"
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
		Plots:    viz.ExportPlots,
		WorkerLog: func(dir string, note func(string)) (func(string), func()) {
			l := runs.OpenWorkerLog(dir, runs.WorkerLogHead, runs.WorkerLogTail, note)
			return l.Line, l.Close
		},
	}
}

package viz

import (
	"fmt"
	"io"
	"path/filepath"
	"time"
)

// ExportPlots draws the figures of the run in dir as PNG into its plots/
// and says on w what it drew: what every run, headless or not, does when
// it ends (record.plots), once training has finished and it costs the
// run nothing, and what x does in the workbench.
func ExportPlots(w io.Writer, dir string) error {
	return exportPlots(w, dir, Options{})
}

// ExportPlotsTo is ExportPlots writing into out instead ("" for the run's
// plots/): how a reader of a run (the read-only workbench, one attached to
// another process's run) draws its figures without writing into the run.
func ExportPlotsTo(w io.Writer, dir, out string) error {
	return exportPlotsTo(w, dir, out, Options{})
}

// exportPlots is ExportPlots drawing with opt.
func exportPlots(w io.Writer, dir string, opt Options) error {
	return exportPlotsTo(w, dir, "", opt)
}

func exportPlotsTo(w io.Writer, dir, out string, opt Options) error {
	start := time.Now()
	r, err := Load(dir)
	if err != nil {
		return fmt.Errorf("plots not exported: %w", err)
	}
	if out == "" {
		out = filepath.Join(dir, "plots")
	}
	res, err := Export(r, out, opt)
	if res != nil {
		for _, n := range res.Notes {
			fmt.Fprintf(w, "plots: %s\n", n)
		}
		if len(res.Files) > 0 {
			fmt.Fprintf(w, "plots: %d figures in %s (%.1fs)\n", len(res.Files), out, time.Since(start).Seconds())
		}
	}
	if err != nil {
		return fmt.Errorf("plots: %w", err)
	}
	return nil
}

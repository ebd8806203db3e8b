package cli

import (
	"fmt"
	"io"
	"time"

	"selmix/app"
	"selmix/internal/safetext"
	"selmix/runs/export"
	"selmix/runs/export/tensorboard"
)

// formatTensorBoard is export's --format for TensorBoard event files.
const formatTensorBoard = "tensorboard"

// exportTensorBoard writes the event files of the runs args name.
func exportTensorBoard(w io.Writer, f exportFlags, args []string) error {
	switch {
	case f.compare:
		return app.BadInput("--compare draws figures; --format tensorboard takes every run given and TensorBoard compares them")
	case f.metric != "" || f.size != "":
		return app.BadInput("--metric and --size are for figures, not --format tensorboard")
	}
	out := f.out
	if out == "" {
		out = "tensorboard"
	}
	start := time.Now()
	var rs []export.Recorded
	for _, a := range args {
		r, err := app.FindRun(f.runs, a)
		if err != nil {
			return err
		}
		tr, err := export.Load(r)
		if err != nil {
			return err
		}
		rs = append(rs, tr)
	}
	paths, err := tensorboard.Export(out, rs)
	for _, p := range paths {
		fmt.Fprintln(w, safetext.Line(p))
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%d runs in %s (%.2fs); view them with: tensorboard --logdir %s\n", len(rs), out, time.Since(start).Seconds(), out)
	return nil
}

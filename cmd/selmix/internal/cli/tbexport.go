package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
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
	if err := outDir(out); err != nil {
		return err
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

// outDir makes the folder --out names, where it is not one already; one
// that cannot be (a file, a path through a file, no permission) is bad
// input, one line naming it.
func outDir(out string) error {
	if fi, err := os.Stat(out); err == nil && !fi.IsDir() {
		return app.BadInput("--out %s: a file, not a folder", safetext.Line(out))
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return app.BadInput("--out %s: cannot make the folder: %v", safetext.Line(out), err)
	}
	return nil
}

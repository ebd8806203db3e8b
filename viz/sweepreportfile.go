package viz

import (
	"io"
	"os"
	"path/filepath"
	"strings"

	"selmix/internal/atomicfile"
	"selmix/runs/sweep"
)

// WriteSweepReport writes the report of r (SweepReport) to the Markdown
// file out as every output a person names is written (atomicfile.Out:
// atomically, and through a symbolic link or a named pipe rather than
// replacing it), with its figures in the folder beside it named
// for out: report.md → report-figures/ (o's FigDir and FigRel are set
// so). It returns the Markdown and the notes.
func WriteSweepReport(r *sweep.Results, out string, o SweepOptions) (md string, notes []string, err error) {
	stem := strings.TrimSuffix(filepath.Base(out), ".md") + "-figures"
	o.FigDir, o.FigRel = filepath.Join(filepath.Dir(out), stem), stem
	md, notes = SweepReport(r, o)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", nil, err
	}
	err = atomicfile.Out(out, io.Discard, func(w io.Writer) error {
		_, err := io.WriteString(w, md)
		return err
	})
	if err != nil {
		return "", nil, err
	}
	return md, notes, nil
}

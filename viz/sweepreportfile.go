package viz

import (
	"os"
	"path/filepath"
	"strings"

	"selmix/internal/atomicfile"
	"selmix/runs/sweep"
)

// WriteSweepReport writes the report of r (SweepReport) to the Markdown
// file out, atomically, with its figures in the folder beside it named
// for out: report.md → report-figures/. It returns the Markdown and the
// notes.
func WriteSweepReport(r *sweep.Results, out, format string) (md string, notes []string, err error) {
	stem := strings.TrimSuffix(filepath.Base(out), ".md") + "-figures"
	md, notes = SweepReport(r, SweepOptions{FigDir: filepath.Join(filepath.Dir(out), stem), FigRel: stem, Format: format})
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", nil, err
	}
	if err := atomicfile.WriteFile(out, []byte(md)); err != nil {
		return "", nil, err
	}
	return md, notes, nil
}

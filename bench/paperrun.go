package bench

import (
	"os"
	"path/filepath"

	"selmix/core/search"
	"selmix/internal/atomicfile"
	"selmix/runs"
	"selmix/runs/sweep"
)

// Smoke makes o the smoke test of the suite: one seed, 60 steps, one
// pre-training epoch (CI).
func (o *PaperOptions) Smoke() { o.Seeds, o.Steps, o.Epochs = 1, 60, 1 }

// PlanPaper plans the suite's sweep (PaperSpec) in the runs root root
// for members that run in workdir. It returns the sweep, not yet
// created, and the spec and text Create records. Its errors are the
// options'.
func PlanPaper(root, workdir string, o PaperOptions) (*sweep.Sweep, *search.Spec, []byte, error) {
	spec, text, err := PaperSpec(o)
	if err != nil {
		return nil, nil, nil, err
	}
	s, err := sweep.Plan(runs.Root(root), spec, search.ExecLocal, workdir)
	if err != nil {
		return nil, nil, nil, err
	}
	return s, spec, text, nil
}

// WritePaperReport writes the report of the paper sweeps ss
// (PaperReport) to the Markdown file out, atomically, its figures into
// figures/ beside it. A figure that failed leaves the report written and
// is figErr.
func WritePaperReport(ss []*sweep.Sweep, command, out string) (figErr, err error) {
	md, figErr := PaperReport(ss, command, filepath.Join(filepath.Dir(out), "figures"), "figures")
	if figErr != nil && md == "" {
		return nil, figErr
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(out, []byte(md)); err != nil {
		return nil, err
	}
	return figErr, nil
}

package viz

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"selmix/internal/atomicfile"
	"selmix/internal/safetext"
)

// File is one written figure.
type File struct {
	Name          string    // file name of the figure inside the output directory
	CSV           string    // file name of its CSV
	Width, Height vg.Length // size on paper
	Pixels        [2]int    // png only: width and height in pixels
}

// Result lists what an export wrote and what it has to say about it
// (figures skipped, values that could not be plotted).
type Result struct {
	Files []File
	Notes []string
}

type figSpec struct {
	name string
	w, h vg.Length
	make func(f *figure, r *RunData) (*drawing, error)
	// height, if set, overrides h for a run (a figure with more panels).
	height func(r *RunData) vg.Length
}

// runFigures are the figures of one run, in the order of the issue.
var runFigures = []figSpec{
	{"metrics", fullWidth, 5 * vg.Inch, metricsFigure, nil},
	{"per-class", fullWidth, 4 * vg.Inch, perClassFigure, func(r *RunData) vg.Length {
		if r.K > maxClassBars {
			return 6 * vg.Inch // the histogram of every class goes below
		}
		return 4 * vg.Inch
	}},
	{"gain", fullWidth, 2.7 * vg.Inch, func(f *figure, r *RunData) (*drawing, error) { return heatFigure(f, r, "G") }, nil},
	{"mixup", fullWidth, 2.7 * vg.Inch, func(f *figure, r *RunData) (*drawing, error) { return heatFigure(f, r, "P") }, nil},
	{"lambda", fullWidth, 3 * vg.Inch, lambdaFigure, nil},
	{"s", colWidth, 2.4 * vg.Inch, sFigure, nil},
	{"linear", fullWidth, 4.2 * vg.Inch, linearFigure, nil},
}

// FigureNames lists the figures Export writes, as file names without
// extension.
func FigureNames() []string {
	out := make([]string, len(runFigures))
	for i, s := range runFigures {
		out[i] = s.name
	}
	return out
}

// Export writes every figure of r, each with its CSV, into dir (created
// if missing). A figure that fails is reported and the others are still
// written; the error joins every failure.
func Export(r *RunData, dir string, o Options) (*Result, error) {
	o, err := prepare(o, dir)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	for _, w := range r.Hist.Warnings {
		res.Notes = append(res.Notes, "log: "+w.String())
	}
	var errs []error
	for _, s := range runFigures {
		h := s.h
		if s.height != nil {
			h = s.height(r)
		}
		f := newFigure(o, s.w, h)
		if err := write(res, dir, s.name, f, func() (*drawing, error) { return s.make(f, r) }); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.name, err))
		}
	}
	return res, errors.Join(errs...)
}

// write draws one figure and writes it and its CSV.
func write(res *Result, dir, name string, f *figure, mk func() (*drawing, error)) error {
	var d *drawing
	var mkErr error
	err := drawSafely(func() { d, mkErr = mk() })
	if err == nil {
		err = mkErr
	}
	var skip errSkip
	if errors.As(err, &skip) {
		res.Notes = append(res.Notes, fmt.Sprintf("%s: skipped: %s", name, skip.reason))
		return nil
	}
	if err != nil {
		return err
	}
	b, err := f.render(d.draw)
	if err != nil {
		return err
	}
	file := File{Name: name + "." + f.opts.Format, CSV: name + ".csv", Width: f.w, Height: f.h}
	if f.opts.Format == "png" {
		file.Pixels = [2]int{int(math.Ceil(float64(f.w/vg.Inch) * float64(f.opts.DPI))), int(math.Ceil(float64(f.h/vg.Inch) * float64(f.opts.DPI)))}
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, file.Name), b); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, file.CSV), d.table.bytes()); err != nil {
		return err
	}
	if d.table.dropped > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%s: %d values not finite, left out of the figure (marked in %s)", name, d.table.dropped, file.CSV))
	}
	res.Files = append(res.Files, file)
	return nil
}

// DefaultCompareMetric is ψ of the objective every run optimized, or mean
// recall when they differ.
func DefaultCompareMetric(rs []*RunData) Metric {
	for _, r := range rs[1:] {
		if r.Objective != rs[0].Objective {
			return ReportedMetrics()[0]
		}
	}
	return ObjectiveMetric(rs[0].Objective)
}

// Compare writes the comparison figures of several runs into dir: one
// curve per run of m over steps (compare-<m>), and the final value of
// every reported metric per run as grouped bars (compare-final).
func Compare(rs []*RunData, m Metric, dir string, o Options) (*Result, error) {
	if len(rs) == 0 {
		return nil, errors.New("compare: no runs")
	}
	o, err := prepare(o, dir)
	if err != nil {
		return nil, err
	}
	rs = distinctLabels(rs)
	res := &Result{}
	var errs []error
	f := newFigure(o, colWidth, 2.8*vg.Inch)
	name := "compare-" + safetext.FileName(m.Name)
	if err := write(res, dir, name, f, func() (*drawing, error) { return compareCurves(f, rs, m) }); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	f = newFigure(o, fullWidth, 3*vg.Inch)
	if err := write(res, dir, "compare-final", f, func() (*drawing, error) { return compareFinal(f, rs) }); err != nil {
		errs = append(errs, fmt.Errorf("compare-final: %w", err))
	}
	return res, errors.Join(errs...)
}

// prepare resolves o's defaults and creates the output directory.
func prepare(o Options, dir string) (Options, error) {
	o, err := o.withDefaults()
	if err != nil {
		return o, err
	}
	return o, os.MkdirAll(dir, 0o755)
}

// drawing is a figure ready to render plus the CSV of what it plots.
type drawing struct {
	draw  func(c draw.Canvas)
	table *table
}

// keyed is the drawing of plot p with f's title and key above it, and
// its CSV t.
func (f *figure) keyed(t *table, p *plot.Plot, key []keyEntry) *drawing {
	return &drawing{table: t, draw: func(c draw.Canvas) {
		c, p := f.drawTitle(c, p)
		c = f.drawKey(c, key)
		drawPlot(p, c)
	}}
}

// errSkip says a figure does not apply to a run (no multipliers to draw).
type errSkip struct{ reason string }

func (e errSkip) Error() string { return e.reason }

// distinctLabels is rs with the id after the name of every run whose
// name another run shares ("min-recall-selmix (20261126-0948-d4d7)"), so
// figure legends and CSVs tell them apart; the runs are copied, not
// changed.
func distinctLabels(rs []*RunData) []*RunData {
	n := map[string]int{}
	for _, r := range rs {
		n[r.Label()]++
	}
	out := make([]*RunData, len(rs))
	for i, r := range rs {
		out[i] = r
		if n[r.Label()] > 1 && r.Meta.Name != "" {
			c := *r
			c.Meta.Name = r.Meta.Name + " (" + r.Meta.ID + ")"
			out[i] = &c
		}
	}
	return out
}

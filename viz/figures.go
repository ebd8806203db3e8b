package viz

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg/draw"

	"selmix/core/train"
)

// drawing is a figure ready to render plus the CSV of what it plots.
type drawing struct {
	draw  func(c draw.Canvas)
	table *table
}

// errSkip says a figure does not apply to a run (no multipliers to draw).
type errSkip struct{ reason string }

func (e errSkip) Error() string { return e.reason }

func steps(r *RunData) []float64 {
	xs := make([]float64, len(r.Hist.Refreshes))
	for i, rf := range r.Hist.Refreshes {
		xs[i] = float64(rf.Step)
	}
	return xs
}

// controlsShown are the controls that changed the run: accepted sets and
// stops (pause/resume change timing only).
func controlsShown(r *RunData) []train.Ack {
	var out []train.Ack
	for _, a := range r.Hist.Controls {
		if a.Err == "" && (a.Control.Op == train.OpSet || a.Control.Op == train.OpStop) {
			out = append(out, a)
		}
	}
	return out
}

// addControls marks every control change on p (or only those of key
// only) with a vertical line; what changed is said in the key and the CSV,
// never written over the data.
func (f *figure) addControls(p *plot.Plot, r *RunData, only string) {
	for _, a := range controlsShown(r) {
		if only != "" && a.Control.Key != only {
			continue
		}
		p.Add(vline{x: float64(a.Step), style: ctlStyle()})
	}
}

// Dotted, where baselines are dashed, so the two never read alike.
func ctlStyle() draw.LineStyle { return lineStyle(ctlColor, 0.7, 0.7, 1.6) }

// controlKey is the key entry for the control marks: each change and its
// step, or a count when there are too many to list.
func (f *figure) controlKey(r *RunData, only string) []keyEntry {
	var parts []string
	for _, a := range controlsShown(r) {
		if only == "" || a.Control.Key == only {
			parts = append(parts, fmt.Sprintf("%s at step %d", a.Control, a.Step))
		}
	}
	switch {
	case len(parts) == 0:
		return nil
	case len(parts) > 3:
		return []keyEntry{{fmt.Sprintf("%d control changes (listed in the CSV)", len(parts)), vline{style: ctlStyle()}}}
	}
	return []keyEntry{{strings.Join(parts, "; "), vline{style: ctlStyle()}}}
}

// noteControls lists the control changes in a figure's CSV.
func noteControls(t *table, r *RunData, only string, fields int) {
	for _, a := range controlsShown(r) {
		if only == "" || a.Control.Key == only {
			row := []string{"control", itoa(a.Step)}
			for len(row) < fields {
				row = append(row, "")
			}
			t.addNote(a.Control.String(), row...)
		}
	}
}

// optimizedNames is the optimized objective, or each one in turn when a
// control changed it.
func optimizedNames(r *RunData) string {
	var objs []string
	for _, rf := range r.Hist.Refreshes {
		o := string(rf.Hyper.Objective)
		if len(objs) == 0 || objs[len(objs)-1] != o {
			objs = append(objs, o)
		}
	}
	return strings.Join(objs, " → ")
}

// drawGrid draws a grid of plots with aligned axes.
func (f *figure) drawGrid(c draw.Canvas, plots [][]*plot.Plot) [][]draw.Canvas {
	rows, cols := len(plots), len(plots[0])
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: 6, PadY: 4, PadTop: 1, PadBottom: 1, PadLeft: 1, PadRight: 4}
	cs := plot.Align(plots, tiles, c)
	for i := range plots {
		for j, p := range plots[i] {
			if p != nil {
				p.Draw(cs[i][j])
			}
		}
	}
	return cs
}

// setXRange pins the step axis to the logged steps (a plot whose values
// were all dropped would otherwise have no range).
func setXRange(p *plot.Plot, xs []float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		if finite(x) {
			lo, hi = min(lo, x), max(hi, x)
		}
	}
	if lo > hi {
		lo, hi = 0, 1
	}
	if lo == hi {
		hi = lo + 1
	}
	p.X.Min, p.X.Max = lo, hi
	fixYRange(p)
}

// fixYRange gives an empty or flat y axis a range gonum/plot can draw.
func fixYRange(p *plot.Plot) {
	if math.IsInf(p.Y.Min, 0) || math.IsInf(p.Y.Max, 0) || p.Y.Min > p.Y.Max {
		p.Y.Min, p.Y.Max = 0, 1
	}
	if p.Y.Min == p.Y.Max {
		d := math.Max(math.Abs(p.Y.Min)*0.05, 0.05)
		p.Y.Min, p.Y.Max = p.Y.Min-d, p.Y.Max+d
	}
}

// Beyond maxClassBars classes, per-class figures show the worstShown
// classes and the bestShown ones (by fine-tuned recall) and a histogram
// of all: a thousand bars cannot be read.
const (
	maxClassBars = 40
	worstShown   = 30
	bestShown    = 10
)

func naGlyph() draw.GlyphStyle {
	return draw.GlyphStyle{Color: black, Radius: 2.5, Shape: draw.CrossGlyph{}}
}

// classTicks names classes on an axis: full names for a few classes,
// indices for many (names would overlap).
func classTicks(r *RunData, maxNamed int) []string {
	out := make([]string, r.K)
	every := 1
	if r.K > 20 {
		every = (r.K + 9) / 10
	}
	for i := range out {
		switch {
		case r.K <= maxNamed:
			out[i] = r.ClassNames[i]
		case i%every == 0:
			out[i] = itoa(i)
		}
	}
	return out
}

func rotateX(p *plot.Plot, k int) {
	if k > 20 {
		p.X.Tick.Label.Rotation = math.Pi / 2
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
		return
	}
	if k > 4 {
		p.X.Tick.Label.Rotation = math.Pi / 6
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	}
}

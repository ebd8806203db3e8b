package viz

import (
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg/draw"
)

// drawGrid draws a grid of plots with aligned axes.
func (f *figure) drawGrid(c draw.Canvas, plots [][]*plot.Plot) [][]draw.Canvas {
	rows, cols := len(plots), len(plots[0])
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: 6, PadY: 4, PadTop: 1, PadBottom: 1, PadLeft: 1, PadRight: 4}
	for _, row := range plots {
		for _, p := range row {
			if p != nil {
				widenAxes(p)
			}
		}
	}
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

// drawPlot draws p on c, its axes widened where they are points.
func drawPlot(p *plot.Plot, c draw.Canvas) {
	widenAxes(p)
	p.Draw(c)
}

// widenAxes widens each of p's axes whose finite range is a point but not
// empty (gonum/plot itself pads an empty or infinite one).
func widenAxes(p *plot.Plot) {
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		if a.Min < a.Max && pointRange(a.Min, a.Max) {
			a.Min, a.Max = widen(a.Min, a.Max)
		}
	}
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

// fixYRange gives an empty, flat or unbounded y axis a range gonum/plot
// can draw (widen).
func fixYRange(p *plot.Plot) {
	p.Y.Min, p.Y.Max = widen(p.Y.Min, p.Y.Max)
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

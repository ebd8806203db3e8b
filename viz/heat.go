package viz

import (
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"selmix/internal/matrixpng"
)

// matrixGrid shows an n×n row-major matrix with row 0 at the top, as
// matrices are printed.
type matrixGrid struct {
	k int
	v []float64
}

func (g matrixGrid) Dims() (c, r int)   { return g.k, g.k }
func (g matrixGrid) X(c int) float64    { return float64(c) }
func (g matrixGrid) Y(r int) float64    { return float64(r) }
func (g matrixGrid) Z(c, r int) float64 { return g.v[(g.k-1-r)*g.k+c] }

// maxCells is the most rows (and columns) a heatmap draws: beyond, blocks
// of classes are averaged. A thousand rows would be finer than the
// printed figure's resolution and its CSV a million lines.
const maxCells = 100

// blocks splits K classes into n consecutive blocks of bs (the last may be
// smaller) with n ≤ maxCells.
func blocks(K int) (bs, n int) {
	bs = (K + maxCells - 1) / maxCells
	return bs, (K + bs - 1) / bs
}

// decimal32 shows a value that is exactly a float32 (runs keep G and P
// as float32) as the shortest decimal that float32 stands for: 0.01, not
// 0.009999999776482582, in CSVs and on colour-bar ticks. Other values,
// such as format 1's float64 matrices, are left alone.
func decimal32(v float64) float64 {
	if !finite(v) || float64(float32(v)) != v {
		return v
	}
	d, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', -1, 32), 64)
	if err != nil {
		return v
	}
	return d
}

// blockMeans averages a K×K row-major matrix over bs×bs blocks of classes.
// A block holding a value that is not finite is NaN: drawn as missing,
// never hidden in a mean.
func blockMeans(v []float64, K, bs int) []float64 {
	n := (K + bs - 1) / bs
	sum := make([]float64, n*n)
	cnt := make([]int, n*n)
	for i := range K {
		for j := range K {
			c := (i/bs)*n + j/bs
			sum[c] += v[i*K+j]
			cnt[c]++
		}
	}
	for c := range sum {
		sum[c] /= float64(cnt[c])
	}
	return sum
}

// snapshotIndices picks the refreshes the heatmaps show, among those that
// kept G and P: the first, the one nearest the middle of fine-tuning, and
// the last.
func snapshotIndices(r *RunData) []int {
	var have []int
	for i := range r.Hist.Refreshes {
		if r.Hist.HasMatrices(i) {
			have = append(have, i)
		}
	}
	if len(have) <= 3 {
		return have
	}
	rs := r.Hist.Refreshes
	first, last := have[0], have[len(have)-1]
	mid := (rs[first].Step + rs[last].Step) / 2
	best := have[1]
	for _, i := range have[1 : len(have)-1] {
		if abs(rs[i].Step-mid) < abs(rs[best].Step-mid) {
			best = i
		}
	}
	return []int{first, best, last}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// blockClass is the class id and name of block b of bs classes in CSVs:
// a class (its name empty if the run names none), or for a block its
// first class and the range ("30-32").
func (r *RunData) blockClass(b, bs int) (id, name string) {
	if bs == 1 {
		if r.Named {
			name = r.ClassNames[b]
		}
		return itoa(b), name
	}
	return itoa(b * bs), fmt.Sprintf("%d-%d", b*bs, min((b+1)*bs, r.K)-1)
}

// heatFigure: the gain matrix G (or the mixup distribution P) at the
// start, middle and end of fine-tuning with one shared colour bar. Only
// the refreshes drawn are read from the run; beyond maxCells classes,
// blocks of classes are averaged.
func heatFigure(f *figure, r *RunData, which string) (*drawing, error) {
	cbLabel := "gain G(i, j) (first-order change of ψ)"
	if which == "P" {
		cbLabel = "mixup probability P(i, j)"
	}
	idx := snapshotIndices(r)
	if len(idx) == 0 {
		return nil, errSkip{"no refresh kept its G and P (see record.matrices_every)"}
	}
	bs, _ := blocks(r.K)
	t, mats, lo, hi, err := heatMatrices(r, which, idx)
	if err != nil {
		return nil, err
	}
	cmap := heatColors(which, lo, hi)
	pal := cmap.Palette(255)
	plots := make([]*plot.Plot, len(idx))
	ticks := classTicks(r, 12)
	for n, i := range idx {
		plots[n] = heatPanel(f, r, which, i, n == 0, mats[n], cmap, pal, ticks)
	}
	cb := f.newPlot("", "", cbLabel)
	cb.Add(colorBar{cmap: cmap, bands: 96})
	cb.HideX()
	cb.Y.Padding = 0
	cb.Y.Label.Position = draw.PosCenter
	var key []keyEntry
	if bs > 1 {
		key = append(key, keyEntry{f.t(fmt.Sprintf("each cell: the mean over a block of %d×%d of the %d classes", bs, bs, r.K)), boxThumb{grey}})
	}
	if t.dropped > 0 {
		key = append(key, keyEntry{"not finite (white, see CSV)", glyphThumb{naGlyph()}})
	}
	return &drawing{table: t, draw: func(c draw.Canvas) {
		c = f.drawKey(c, key)
		// The colour bar takes a narrow strip at the right, spanning the
		// heatmaps' data area exactly.
		cbW := 0.85 * vg.Inch
		left := c
		left.Max.X -= cbW
		cs := f.drawGrid(left, [][]*plot.Plot{plots})
		data := plots[0].DataCanvas(cs[0][0])
		right := c
		right.Min.X = c.Max.X - cbW + 10
		right.Max.X -= 2
		right.Min.Y, right.Max.Y = data.Min.Y, data.Max.Y
		cb.Draw(right)
	}}, nil
}

// heatMatrices reads G or P (which) of the refreshes idx, averaged over
// blocks of classes beyond maxCells: the CSV table, one nb×nb matrix per
// refresh (non-finite values NaN) and the range of the finite values.
func heatMatrices(r *RunData, which string, idx []int) (t *table, mats [][]float64, lo, hi float64, err error) {
	K := r.K
	bs, nb := blocks(K)
	t = newTable("matrix", "step", "row_class", "row_class_name", "col_class", "col_class_name", "value")
	mats = make([][]float64, len(idx))
	lo, hi = math.Inf(1), math.Inf(-1)
	for n, i := range idx {
		rf := &r.Hist.Refreshes[i]
		G, P, err := r.Hist.Matrices(i)
		if err != nil {
			return nil, nil, 0, 0, err
		}
		src := G
		if which == "P" {
			src = P
		}
		if len(src) != K*K {
			src = make([]float64, K*K)
			for j := range src {
				src[j] = nan
			}
		}
		if bs > 1 {
			src = blockMeans(src, K, bs)
		}
		m := make([]float64, nb*nb)
		for a := range nb {
			row, rowName := r.blockClass(a, bs)
			for b := range nb {
				col, colName := r.blockClass(b, bs)
				v := src[a*nb+b]
				if bs == 1 {
					v = decimal32(v)
				}
				t.add(v, which, itoa(rf.Step), row, rowName, col, colName)
				if !finite(v) {
					v = nan // drawn in the NaN colour, never as a palette colour
				} else {
					lo, hi = min(lo, v), max(hi, v)
				}
				m[a*nb+b] = v
			}
		}
		mats[n] = m
	}
	return t, mats, lo, hi, nil
}

// heatColors is the colour map of G (diverging around 0: red gains help
// the objective, blue ones hurt it) or P (sequential from 0) over the
// finite values' range [lo, hi].
func heatColors(which string, lo, hi float64) palette.ColorMap {
	if which == "G" {
		m := math.Max(math.Abs(lo), math.Abs(hi))
		if !(m > 0) || math.IsInf(m, 0) {
			m = 1
		}
		d := moreland.SmoothBlueRed()
		d.SetMin(-m)
		d.SetMax(m)
		return d
	}
	m := hi
	if !(m > 0) || math.IsInf(m, 0) {
		m = 1
	}
	return matrixpng.Sequential(m)
}

// heatPanel draws matrix mat of refresh i: the first panel (left) names
// the label classes, non-finite cells are marked.
func heatPanel(f *figure, r *RunData, which string, i int, first bool, mat []float64, cmap palette.ColorMap, pal palette.Palette, ticks []string) *plot.Plot {
	_, nb := blocks(r.K)
	title := fmt.Sprintf("step %d", r.Hist.Refreshes[i].Step)
	switch {
	case i == 0:
		title += " (pre-trained)"
	case i == len(r.Hist.Refreshes)-1:
		title += " (end)"
	}
	p := f.newPlot(which+" at "+title, "mixed-in class j", "")
	h := plotter.NewHeatMap(matrixGrid{nb, mat}, pal)
	h.Min, h.Max = cmap.Min(), cmap.Max()
	h.NaN = color.White
	p.Add(h)
	var bad plotter.XYs
	for a := range nb {
		for b := range nb {
			if math.IsNaN(mat[a*nb+b]) {
				bad = append(bad, plotter.XY{X: float64(b), Y: float64(nb - 1 - a)})
			}
		}
	}
	if len(bad) > 0 {
		sc, _ := plotter.NewScatter(bad)
		sc.GlyphStyle = naGlyph()
		p.Add(sc)
	}
	xt, yt := heatTicks(f, r, first, ticks)
	p.X.Tick.Marker = plot.ConstantTicks(xt)
	p.Y.Tick.Marker = plot.ConstantTicks(yt)
	if first {
		p.Y.Label.Text = f.t("label class i")
	}
	p.X.Padding, p.Y.Padding = 0, 0
	p.X.Min, p.X.Max = -0.5, float64(nb)-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(nb)-0.5
	return p
}

// heatTicks marks the cells of a heatmap panel: cell c holds classes
// c·bs …, and labels name the first. Up to 20 cells every one is marked;
// beyond, a labelled mark every tenth (every quarter when blocks are
// averaged: three panels share the width). Only the first panel labels
// its rows.
func heatTicks(f *figure, r *RunData, first bool, ticks []string) (xt, yt []plot.Tick) {
	bs, nb := blocks(r.K)
	every := 1
	switch {
	case bs > 1:
		every = (nb + 3) / 4
	case nb > 20:
		every = (nb + 9) / 10
	}
	for c := range nb {
		if c%every != 0 {
			continue
		}
		xt = append(xt, plot.Tick{Value: float64(c), Label: itoa(c * bs)})
		yl := ""
		if first {
			yl = itoa(c * bs)
			if bs == 1 && r.K <= 12 {
				yl = ticks[c]
				if r.Named {
					yl = fmt.Sprintf("%s %d", ticks[c], c)
				}
			}
		}
		yt = append(yt, plot.Tick{Value: float64(nb - 1 - c), Label: f.t(yl)})
	}
	return xt, yt
}

// Package matrixpng draws a K×K matrix as a bare heatmap image, the
// images of G and P that TensorBoard shows, and holds the sequential
// colour map the figures' heatmaps share. It sits below viz and
// runs/export, which both draw with it.
package matrixpng

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"

	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
)

// matrixMinSide is the smallest side, in pixels, of a PNG image:
// small matrices get square cells of several pixels.
const matrixMinSide = 256

// nanGrey draws the entries of a matrix that are not finite.
var nanGrey = color.NRGBA{160, 160, 160, 255}

// Side is the side in pixels of the PNG image of a K×K
// matrix.
func Side(K int) int { return K * max(1, (matrixMinSide+K-1)/K) }

// Image draws a K×K row-major matrix as a bare heatmap, row i top
// to bottom and column j left to right, each entry a square of
// Side(K)/K pixels: the images of G and P that TensorBoard shows.
// A gain matrix (diverging) is coloured blue (negative) through white (0)
// to red (positive), symmetric about 0 like the gain figure; a
// distribution P white (0) to dark blue (its largest entry). The colour
// scale has 255 steps, as the figures' heatmaps do; entries that are not
// finite are grey.
func Image(v []float64, K int, diverging bool) *image.Paletted {
	if K <= 0 || len(v) != K*K {
		panic(fmt.Sprintf("matrixpng: Image of %d values with K = %d", len(v), K))
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range v {
		if finite(x) {
			lo, hi = min(lo, x), max(hi, x)
		}
	}
	var cmap palette.ColorMap
	if diverging {
		m := max(math.Abs(lo), math.Abs(hi))
		if !(m > 0) || math.IsInf(m, 0) {
			m = 1
		}
		cmap = moreland.SmoothBlueRed()
		cmap.SetMin(-m)
		cmap.SetMax(m)
	} else {
		if !(hi > 0) || math.IsInf(hi, 0) {
			hi = 1
		}
		cmap = Sequential(hi)
	}
	const steps = 255
	lo, span := cmap.Min(), cmap.Max()-cmap.Min()
	pal := make(color.Palette, 0, steps+1)
	for k := range steps {
		c, err := cmap.At(min(lo+span*float64(k)/(steps-1), cmap.Max()))
		if err != nil {
			c = nanGrey // cannot happen: every step is in the map's range
		}
		pal = append(pal, c)
	}
	pal = append(pal, nanGrey)
	cell := Side(K) / K
	img := image.NewPaletted(image.Rect(0, 0, K*cell, K*cell), pal)
	for i := range K {
		for j := range K {
			idx := uint8(steps) // NaN grey
			if x := v[i*K+j]; finite(x) {
				f := min(max((x-lo)/span, 0), 1)
				idx = uint8(math.Round(f * (steps - 1)))
			}
			for y := i * cell; y < (i+1)*cell; y++ {
				row := img.Pix[y*img.Stride+j*cell : y*img.Stride+(j+1)*cell]
				for x := range row {
					row[x] = idx
				}
			}
		}
	}
	return img
}

// PNG is Image encoded as PNG.
func PNG(v []float64, K int, diverging bool) ([]byte, error) {
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, Image(v, K, diverging)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Sequential is the colour map of a distribution: white at 0 to dark blue
// at hi.
func Sequential(hi float64) palette.ColorMap {
	m, err := moreland.NewLuminance([]color.Color{
		color.NRGBA{8, 48, 107, 255}, color.NRGBA{66, 146, 198, 255}, color.NRGBA{255, 255, 255, 255},
	})
	if err != nil {
		panic(err) // fixed control colours of increasing luminance
	}
	m = palette.Reverse(m)
	m.SetMin(0)
	m.SetMax(hi)
	return m
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

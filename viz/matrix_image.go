package viz

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

// matrixMinSide is the smallest side, in pixels, of a MatrixPNG image:
// small matrices get square cells of several pixels.
const matrixMinSide = 256

// nanGrey draws the entries of a matrix that are not finite.
var nanGrey = color.NRGBA{160, 160, 160, 255}

// MatrixSide is the side in pixels of the MatrixPNG image of a K×K
// matrix.
func MatrixSide(K int) int { return K * max(1, (matrixMinSide+K-1)/K) }

// MatrixPNG draws a K×K row-major matrix as a bare PNG heatmap, row i
// top to bottom and column j left to right, each entry a square of
// ⌈256/K⌉ pixels: the images of G and P that TensorBoard shows. A gain
// matrix (diverging) is coloured blue (negative) through white (0) to red
// (positive), symmetric about 0 like the gain figure; a distribution P
// white (0) to dark blue (its largest entry). Entries that are not
// finite are grey.
func MatrixPNG(v []float64, K int, diverging bool) ([]byte, error) {
	if K <= 0 || len(v) != K*K {
		panic(fmt.Sprintf("viz: MatrixPNG of %d values with K = %d", len(v), K))
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
		cmap = sequential(hi)
	}
	cell := MatrixSide(K) / K
	img := image.NewNRGBA(image.Rect(0, 0, K*cell, K*cell))
	for i := range K {
		for j := range K {
			c := color.Color(nanGrey)
			if x := v[i*K+j]; finite(x) {
				x = min(max(x, cmap.Min()), cmap.Max())
				if cc, err := cmap.At(x); err == nil {
					c = cc
				}
			}
			nc := color.NRGBAModel.Convert(c).(color.NRGBA)
			for y := i * cell; y < (i+1)*cell; y++ {
				row := img.Pix[y*img.Stride+j*cell*4 : y*img.Stride+(j+1)*cell*4]
				for x := 0; x < len(row); x += 4 {
					row[x], row[x+1], row[x+2], row[x+3] = nc.R, nc.G, nc.B, nc.A
				}
			}
		}
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

package matrixpng

import (
	"bytes"
	"image/color"
	"image/png"
	"math"
	"testing"
)

// PNG puts entry (i, j) at row i, column j in the colour of its
// value: G red for gains, blue for losses, white at 0, grey where not
// finite; P white at 0 and darkest at its largest entry.
func TestPNG(t *testing.T) {
	const K = 3
	G := []float64{
		2, 0, -2,
		1, math.NaN(), 0,
		0, 0, 0,
	}
	P := []float64{
		0, 0.5, 0,
		0.25, 0, 0,
		0, 0, 0.25,
	}
	cell := (256 + K - 1) / K
	at := func(b []byte, i, j int) color.NRGBA {
		t.Helper()
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if sz := img.Bounds().Size(); sz.X != K*cell || sz.Y != K*cell {
			t.Fatalf("image is %v, want %d px a side", sz, K*cell)
		}
		return color.NRGBAModel.Convert(img.At(j*cell+cell/2, i*cell+cell/2)).(color.NRGBA)
	}
	g, err := PNG(G, K, true)
	if err != nil {
		t.Fatal(err)
	}
	p, err := PNG(P, K, false)
	if err != nil {
		t.Fatal(err)
	}
	white := func(c color.NRGBA) bool { return c.R > 200 && c.G > 200 && c.B > 200 }
	checks := []struct {
		name string
		c    color.NRGBA
		ok   func(color.NRGBA) bool
	}{
		{"G gain", at(g, 0, 0), func(c color.NRGBA) bool { return c.R > 150 && c.B < 100 }},
		{"G loss", at(g, 0, 2), func(c color.NRGBA) bool { return c.B > 150 && c.R < 100 }},
		{"G zero", at(g, 0, 1), white},
		{"G NaN", at(g, 1, 1), func(c color.NRGBA) bool { return c == nanGrey }},
		{"P zero", at(p, 0, 0), white},
		{"P max", at(p, 0, 1), func(c color.NRGBA) bool { return c.B > c.R+50 && c.R < 60 }},
	}
	for _, c := range checks {
		if !c.ok(c.c) {
			t.Errorf("%s: colour %v", c.name, c.c)
		}
	}
	if lighter, darker := at(p, 1, 0), at(p, 0, 1); lighter.R <= darker.R {
		t.Errorf("P 0.25 %v is not lighter than P 0.5 %v", lighter, darker)
	}
}

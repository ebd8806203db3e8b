package train

import (
	"testing"

	"gonum.org/v1/gonum/mat"
)

// With gain normalisation the softmax sees G/max|G| (here max|G| = 4, from
// a negative entry); without it, G itself. NaN and ±Inf never set the scale.
func TestScaledGain(t *testing.T) {
	G := mat.NewDense(2, 2, []float64{1, -4, 2, 0.5})
	norm := (&Engine{cfg: Config{NormalizeGain: true}}).scaled(G)
	want := []float64{0.25, -1, 0.5, 0.125}
	for i, v := range norm.RawMatrix().Data {
		if v != want[i] {
			t.Errorf("normalised G[%d] = %v, want %v", i, v, want[i])
		}
	}
	if raw := (&Engine{}).scaled(G); raw != G {
		t.Error("without normalisation scaled must return G itself")
	}
	zero := mat.NewDense(2, 2, nil)
	if got := (&Engine{cfg: Config{NormalizeGain: true}}).scaled(zero); got != zero {
		t.Error("an all-zero G must be left alone")
	}
}

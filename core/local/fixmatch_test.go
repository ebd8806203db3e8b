package local

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"selmix/core/model"
)

func TestArgmaxSoftmax(t *testing.T) {
	for _, z := range [][]float32{{0, 0}, {1, 2, 3}, {-5, 10, 9.5}, {100, -100, 0, 99}} {
		best, p := argmaxSoftmax(z)
		// Naive oracle: softmax by the definition.
		s, nb := 0.0, 0
		for k, v := range z {
			s += math.Exp(float64(v))
			if v > z[nb] {
				nb = k
			}
		}
		want := math.Exp(float64(z[nb])) / s
		if best != nb || math.Abs(p-want) > 1e-12 {
			t.Errorf("argmaxSoftmax(%v) = %d, %v; want %d, %v", z, best, p, nb, want)
		}
	}
}

// A weak view of an image is the image shifted by at most 2 pixels and
// maybe flipped: every pixel is an original pixel or zero padding, and
// most of the image survives.
func TestAugmentWeakIsShiftFlip(t *testing.T) {
	const side = 10
	src := make([]float32, side*side)
	orig := map[float32]bool{}
	for i := range src {
		src[i] = float32(i + 1)
		orig[src[i]] = true
	}
	rng := rand.New(rand.NewPCG(1, 2))
	dst := make([]float32, len(src))
	for trial := 0; trial < 50; trial++ {
		augment(dst, src, side, false, rng)
		kept := 0
		for _, v := range dst {
			if v != 0 && !orig[v] {
				t.Fatalf("weak view has pixel %v not in the image", v)
			}
			if v != 0 {
				kept++
			}
		}
		if kept < (side-2)*(side-2) {
			t.Errorf("weak view kept %d pixels, want ≥ %d (shift ≤ 2)", kept, (side-2)*(side-2))
		}
	}
	// Strong views are noisy: values leave the original set.
	augment(dst, src, side, true, rng)
	off := 0
	for _, v := range dst {
		if !orig[v] {
			off++
		}
	}
	if off < side*side/2 {
		t.Errorf("strong view: only %d of %d pixels noisy", off, side*side)
	}
}

// With an unreachable threshold nothing is pseudo-labelled and the model is
// untouched; with a threshold every prediction meets, the whole batch is
// used with the weak view's predictions as labels.
func TestFixMatchThreshold(t *testing.T) {
	sp := toySplit(3, 6, 60, 4)
	sp.Unlabeled = sp.Test
	net := toyNet(t, sp, 8)
	o := model.StepOpts{LRHead: 0.1, LRBackbone: 0.1}
	before := net.Params()
	fm := newFixMatch(&sp.Unlabeled, sp.K, 8, net.Dim(), 1.5, rand.New(rand.NewPCG(1, 1)))
	if _, frac, err := fm.step(net, nil, o); err != nil || frac != 0 {
		t.Fatalf("threshold 1.5: frac %v, err %v; want 0, nil", frac, err)
	}
	if !reflect.DeepEqual(net.Params(), before) {
		t.Error("threshold 1.5 changed the model")
	}
	fm = newFixMatch(&sp.Unlabeled, sp.K, 8, net.Dim(), 1e-9, rand.New(rand.NewPCG(1, 1)))
	loss, frac, err := fm.step(net, nil, o)
	if err != nil || frac != 1 || !(loss > 0) {
		t.Fatalf("threshold 1e-9: loss %v frac %v err %v; want > 0, 1, nil", loss, frac, err)
	}
	if reflect.DeepEqual(net.Params(), before) {
		t.Error("a confident batch did not change the model")
	}
}

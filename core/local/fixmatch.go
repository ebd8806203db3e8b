package local

import (
	"math"
	"math/rand/v2"

	"selmix/core/data"
	"selmix/core/model"
)

// fixMatch is the unlabeled half of FixMatch-style pre-training (Sohn et
// al. 2020, with logit adjustment as in the paper's semi-supervised runs):
// predict on a weakly augmented view, keep predictions whose confidence
// reaches the threshold as pseudo-labels, and train on a strongly
// augmented view of the same images.
type fixMatch struct {
	u          *data.Set
	threshold  float64
	side       int // image side for spatial augmentation; 0 = not an image
	rng        *rand.Rand
	K          int
	weak, strg []float32
	feat, lgt  []float32
	idx        []int
	x          []float32
	y          []int
}

func newFixMatch(u *data.Set, K, B, d int, threshold float64, rng *rand.Rand) *fixMatch {
	side := int(math.Round(math.Sqrt(float64(u.Dim))))
	if side*side != u.Dim {
		side = 0
	}
	return &fixMatch{
		u: u, threshold: threshold, side: side, rng: rng, K: K,
		weak: make([]float32, B*u.Dim), strg: make([]float32, B*u.Dim),
		feat: make([]float32, B*d), lgt: make([]float32, B*K),
		idx: make([]int, 0, B), x: make([]float32, B*u.Dim), y: make([]int, B),
	}
}

// step takes one SGD step on the confident unlabeled samples of a random
// batch. It returns the loss and the fraction of the batch that was
// confident (0 and no step if none was).
func (f *fixMatch) step(net *model.Net, adj []float32, o model.StepOpts) (loss, frac float64, err error) {
	B, in := len(f.y), f.u.Dim
	picks := make([]int, B)
	for i := range picks {
		picks[i] = f.rng.IntN(f.u.N)
		augment(f.weak[i*in:(i+1)*in], f.u.Row(picks[i]), f.side, false, f.rng)
		augment(f.strg[i*in:(i+1)*in], f.u.Row(picks[i]), f.side, true, f.rng)
	}
	if err := net.Forward(f.feat, f.lgt, f.weak, B); err != nil {
		return 0, 0, err
	}
	f.idx = f.idx[:0]
	var labels []int
	for i := 0; i < B; i++ {
		k, p := argmaxSoftmax(f.lgt[i*f.K : (i+1)*f.K])
		if p >= f.threshold {
			f.idx = append(f.idx, i)
			labels = append(labels, k)
		}
	}
	n := len(f.idx)
	if n == 0 {
		return 0, 0, nil
	}
	// The graph's batch is fixed: cycle the confident samples to fill it and
	// scale the step by n/B, which equals FixMatch's masked mean over B.
	for i := 0; i < B; i++ {
		j := f.idx[i%n]
		copy(f.x[i*in:(i+1)*in], f.strg[j*in:(j+1)*in])
		f.y[i] = labels[i%n]
	}
	frac = float64(n) / float64(B)
	o.LRHead *= float32(frac)
	o.LRBackbone *= float32(frac)
	loss, err = net.CEStep(f.x, f.y, adj, o)
	return loss, frac, err
}

// argmaxSoftmax returns the most likely class of logits and its softmax
// probability.
func argmaxSoftmax(z []float32) (int, float64) {
	best := 0
	for k := range z {
		if z[k] > z[best] {
			best = k
		}
	}
	s := 0.0
	for _, v := range z {
		s += math.Exp(float64(v - z[best]))
	}
	return best, 1 / s
}

// augment writes an augmented copy of src to dst. Images get a random
// shift (±2 px weak, ±4 strong) and horizontal flip; strong views also get
// an 8×8 cutout. Every strong view gets Gaussian noise (σ 0.1); non-image
// inputs get only noise (σ 0.01 weak).
func augment(dst, src []float32, side int, strong bool, rng *rand.Rand) {
	sigma := 0.01
	if strong {
		sigma = 0.1
	}
	if side == 0 {
		for i, v := range src {
			dst[i] = v + float32(sigma*rng.NormFloat64())
		}
		return
	}
	maxShift := 2
	if strong {
		maxShift = 4
	}
	dx, dy := rng.IntN(2*maxShift+1)-maxShift, rng.IntN(2*maxShift+1)-maxShift
	flip := rng.IntN(2) == 1
	for r := 0; r < side; r++ {
		for c := 0; c < side; c++ {
			sr, sc := r-dy, c-dx
			if flip {
				sc = side - 1 - sc
			}
			v := float32(0)
			if sr >= 0 && sr < side && sc >= 0 && sc < side {
				v = src[sr*side+sc]
			}
			dst[r*side+c] = v
		}
	}
	if !strong {
		return
	}
	cr, cc := rng.IntN(side), rng.IntN(side)
	for r := max(0, cr-4); r < min(side, cr+4); r++ {
		for c := max(0, cc-4); c < min(side, cc+4); c++ {
			dst[r*side+c] = 0
		}
	}
	for i := range dst {
		dst[i] += float32(sigma * rng.NormFloat64())
	}
}

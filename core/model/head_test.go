package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The fast head (BLAS on the weights) and the gorgonia graphs compute the
// same steps and evaluations, to float32 rounding: losses, weights after
// many mixup, soft-target and logit-adjusted CE steps, features and logits.
func TestFastHeadMatchesGraph(t *testing.T) {
	const d, K, B = 13, 7, 16
	rng := rand.New(rand.NewPCG(4, 4))
	fast, slow := twins(t, Config{Arch: "identity", In: d, Classes: K, Batch: B, EvalBatch: 9, Seed: 5})
	var err error
	if !fast.fastHead() {
		t.Fatal("an identity float32 net without adapter does not take the fast path")
	}
	vec := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	labels := func() []int {
		y := make([]int, B)
		for i := range y {
			y[i] = rng.IntN(K)
		}
		return y
	}
	o := StepOpts{LRHead: 0.1, LRBackbone: 0.01, WeightDecay: 5e-4, Momentum: 0.9}
	close := func(what string, a, b, tol float64) {
		t.Helper()
		if math.Abs(a-b) > tol*(1+math.Abs(b)) {
			t.Errorf("%s: fast %v, graph %v", what, a, b)
		}
	}
	for step := range 30 {
		x1, x2, beta, y := vec(B*d), vec(B*d), make([]float32, B), labels()
		for i := range beta {
			beta[i] = float32(0.6 + 0.4*rng.Float64())
		}
		var lf, ls float64
		if step%3 == 1 {
			// Soft targets with rows of any sum, and an adjustment.
			tg, adj := vec(K*K), vec(K)
			for i := range tg {
				tg[i] = float32(math.Abs(float64(tg[i])))
			}
			lf, err = fast.SoftStep(x1, y, tg, adj, o)
			if err == nil {
				useFastHead = false
				ls, err = slow.SoftStep(x1, y, tg, adj, o)
				useFastHead = true
			}
		} else if step%3 == 2 {
			adj := vec(K)
			lf, err = fast.CEStep(x1, y, adj, o)
			if err == nil {
				useFastHead = false
				ls, err = slow.CEStep(x1, y, adj, o)
				useFastHead = true
			}
		} else {
			lf, err = fast.MixStep(x1, x2, beta, y, o)
			if err == nil {
				useFastHead = false
				ls, err = slow.MixStep(x1, x2, beta, y, o)
				useFastHead = true
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		close("loss", lf, ls, 1e-5)
	}
	for i, p := range fast.Params() {
		q := slow.Params()[i]
		for j := range p.Data {
			close(p.Name, p.Data[j], q.Data[j], 1e-4)
		}
	}
	const rows = 20
	x := vec(rows * d)
	ff, lgf := make([]float32, rows*d), make([]float32, rows*K)
	fs, lgs := make([]float32, rows*d), make([]float32, rows*K)
	if err := fast.Forward(ff, lgf, x, rows); err != nil {
		t.Fatal(err)
	}
	useFastHead = false
	err = slow.Forward(fs, lgs, x, rows)
	useFastHead = true
	if err != nil {
		t.Fatal(err)
	}
	for i := range ff {
		close("feature", float64(ff[i]), float64(fs[i]), 0)
	}
	for i := range lgf {
		close("logit", float64(lgf[i]), float64(lgs[i]), 1e-4)
	}
}

// A fast step with a diverging loss leaves the weights alone, like the
// graphs' step.
func TestFastHeadRefusesNonFiniteLoss(t *testing.T) {
	n := newNet(t, Config{Arch: "identity", In: 2, Classes: 2, Batch: 1})
	before := n.Params()
	_, err := n.CEStep([]float32{float32(math.Inf(1)), 0}, []int{0}, nil, StepOpts{LRHead: 1})
	if err == nil {
		t.Fatal("a step on an infinite input succeeded")
	}
	for i, p := range n.Params() {
		for j := range p.Data {
			if p.Data[j] != before[i].Data[j] {
				t.Fatalf("%s changed after a refused step", p.Name)
			}
		}
	}
}

// SoftStep with identity targets is CEStep bit for bit, on the fast head and
// on the graphs (both take the same code with one-hot rows).
func TestSoftStepIdentityIsCE(t *testing.T) {
	const K, B = 4, 6
	eye := make([]float32, K*K)
	for i := range K {
		eye[i*K+i] = 1
	}
	for _, cfg := range []Config{
		{Arch: "identity", In: 5, Classes: K, Batch: B, Seed: 3},
		{Arch: "mlp", In: 5, Hidden: []int{4}, Classes: K, Batch: B, Seed: 3},
	} {
		a, b := twins(t, cfg)
		rng := rand.New(rand.NewPCG(8, 9))
		o := StepOpts{LRHead: 0.1, LRBackbone: 0.01, WeightDecay: 5e-4, Momentum: 0.9}
		for range 5 {
			x, y, adj := randF32(rng, B*cfg.In, 1), randLabels(rng, B, K), randF32(rng, K, 1)
			la, err := a.CEStep(x, y, adj, o)
			if err != nil {
				t.Fatal(err)
			}
			lb, err := b.SoftStep(x, y, eye, adj, o)
			if err != nil {
				t.Fatal(err)
			}
			if la != lb {
				t.Errorf("%s: CE loss %v, soft loss with T = I %v", cfg.Arch, la, lb)
			}
		}
		for i, p := range a.Params() {
			q := b.Params()[i]
			for j := range p.Data {
				if p.Data[j] != q.Data[j] {
					t.Fatalf("%s: %s[%d] is %v after CE steps, %v after soft steps with T = I", cfg.Arch, p.Name, j, p.Data[j], q.Data[j])
				}
			}
		}
	}
}

// FreezeBackbone moves the head only; the backbone's momentum stays zero
// too, so a later unfrozen step starts from a clean buffer.
func TestSoftStepFreezeBackbone(t *testing.T) {
	const K, B = 3, 4
	n := newNet(t, Config{Arch: "mlp", In: 5, Hidden: []int{4}, Classes: K, Batch: B, Seed: 1})
	before := n.Params()
	rng := rand.New(rand.NewPCG(1, 1))
	tg := []float32{0.8, 0.1, 0.1, 0.1, 0.8, 0.1, 0.1, 0.1, 0.8}
	o := StepOpts{LRHead: 0.5, LRBackbone: 0.5, Momentum: 0.9, FreezeBackbone: true}
	for range 3 {
		if _, err := n.SoftStep(randF32(rng, B*5, 1), randLabels(rng, B, K), tg, nil, o); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range n.Params() {
		changed := false
		for j := range p.Data {
			changed = changed || p.Data[j] != before[i].Data[j]
		}
		if head := n.params[i].head; changed != head {
			t.Errorf("%s (head %v): changed %v", p.Name, head, changed)
		}
		if !n.params[i].head {
			for _, v := range n.params[i].mom.Float32s() {
				if v != 0 {
					t.Fatalf("%s: momentum %v after frozen steps", p.Name, v)
				}
			}
		}
	}
}

package model

import (
	"math/rand/v2"
	"testing"
)

func benchNet(b *testing.B, cfg Config) (*Net, []float32, []float32, []float32, []int) {
	n := newNet(b, cfg)
	rng := rand.New(rand.NewPCG(1, 1))
	c := n.Config()
	x1, x2 := randF32(rng, c.Batch*c.In, 1), randF32(rng, c.Batch*c.In, 1)
	beta := make([]float32, c.Batch)
	for i := range beta {
		beta[i] = 0.5 + 0.5*rng.Float32()
	}
	return n, x1, x2, beta, randLabels(rng, c.Batch, c.Classes)
}

func reportSteps(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
}

// BenchmarkMixStep: mlp 784-256-128 (+ head to 10), B = 128 (2B = 256 rows
// through the backbone).
func BenchmarkMixStep(b *testing.B) {
	n, x1, x2, beta, y := benchNet(b, Config{In: 784, Hidden: []int{256, 128}, Classes: 10, Batch: 128})
	o := StepOpts{LRHead: 1e-3, LRBackbone: 1e-4, WeightDecay: 5e-4, Momentum: 0.9}
	for b.Loop() {
		if _, err := n.MixStep(x1, x2, beta, y, o); err != nil {
			b.Fatal(err)
		}
	}
	reportSteps(b)
}

// BenchmarkCEStep: mlp 784-256-10, B = 128 (the PyTorch reference).
func BenchmarkCEStep(b *testing.B) {
	benchCE(b, Config{In: 784, Hidden: []int{256}, Classes: 10, Batch: 128})
}

// BenchmarkCEStepCNN: the cnn on 28×28, B = 128.
func BenchmarkCEStepCNN(b *testing.B) {
	benchCE(b, Config{Arch: "cnn", In: 784, Classes: 10, Batch: 128})
}

func benchCE(b *testing.B, cfg Config) {
	n, x, _, _, y := benchNet(b, cfg)
	o := StepOpts{LRHead: 1e-3, LRBackbone: 1e-3, WeightDecay: 5e-4, Momentum: 0.9}
	for b.Loop() {
		if _, err := n.CEStep(x, y, nil, o); err != nil {
			b.Fatal(err)
		}
	}
	reportSteps(b)
}

// BenchmarkForward: 5000 rows through mlp 784-256-128-10, EvalBatch 500.
func BenchmarkForward(b *testing.B) {
	n, _, _, _, _ := benchNet(b, Config{In: 784, Hidden: []int{256, 128}, Classes: 10})
	const rows = 5000
	x := randF32(rand.New(rand.NewPCG(2, 2)), rows*784, 1)
	feat, logits := make([]float32, rows*n.Dim()), make([]float32, rows*10)
	for b.Loop() {
		if err := n.Forward(feat, logits, x, rows); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*rows)/b.Elapsed().Seconds(), "rows/s")
}

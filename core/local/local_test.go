package local

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"selmix/core/data"
	"selmix/core/local/localtest"
	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/core/model"
	"selmix/core/train"
)

// toySplit is the toy problem (localtest.Split).
func toySplit(K, dim, n1 int, seed uint64) *data.Split { return localtest.Split(K, dim, n1, seed) }

func toyNet(t *testing.T, sp *data.Split, batch int) *model.Net {
	t.Helper()
	net, err := localtest.Net(sp, batch)
	if err != nil {
		t.Fatal(err)
	}
	return net
}

func toyLocal(t *testing.T, sp *data.Split, batch int) *Local {
	t.Helper()
	l, err := New(toyNet(t, sp, batch), sp, 11)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Mean recall on a balanced validation set linearises to L = I: the CSST
// loss is plain cross-entropy, and a soft step with it is a CE step bit for
// bit (the same draws, the same arithmetic).
func TestCSSTUniformIsCE(t *testing.T) {
	C := mat.NewDense(2, 2, []float64{0.4, 0.1, 0.2, 0.3})
	T, a, err := train.CSSTObjectiveLoss(metric.MeanRecall, C, nil, loop.DefaultHyper().Params(2, 0))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(T, []float64{1, 0, 0, 1}) || a[0] != a[1] {
		t.Fatalf("targets %v, adjustment %v; want I and equal adjustments", T, a)
	}
	sp := toySplit(4, 6, 90, 1)
	eye := make([]float64, 16)
	for i := range 4 {
		eye[i*5] = 1
	}
	lr := []float64{0.05, 0.04, 0.03, 0.02, 0.01}
	ce, soft := toyLocal(t, sp, 16), toyLocal(t, sp, 16)
	lc, err := ce.Train(&train.TrainRequest{Mode: train.ModeCE, LR: lr, Batch: 16, WeightDecay: 5e-4, Momentum: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := soft.Train(&train.TrainRequest{Mode: train.ModeSoft, Targets: eye, LR: lr, Batch: 16, WeightDecay: 5e-4, Momentum: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	if lc != ls || !reflect.DeepEqual(ce.Net().Params(), soft.Net().Params()) {
		t.Errorf("soft steps with T = I differ from CE steps: loss %v vs %v", ls, lc)
	}
}

// Class-balanced sampling draws every class equally often whatever its
// count; instance sampling draws classes in proportion to their counts.
func TestSoftSampling(t *testing.T) {
	sp := toySplit(4, 6, 90, 1) // counts 90, 30, 10, 3
	const B, steps = 16, 250
	n := float64(B * steps)
	counts := sp.Labeled.Counts(4)
	eye := make([]float64, 16)
	for i := range 4 {
		eye[i*5] = 1
	}
	for _, smp := range []train.Sampling{train.SampleClass, train.SampleInstance} {
		l := toyLocal(t, sp, B)
		seen := make([]float64, 4)
		for range steps {
			if _, err := l.Train(&train.TrainRequest{Mode: train.ModeSoft, Targets: eye, Sampling: smp, LR: []float64{1e-4}, Batch: B}); err != nil {
				t.Fatal(err)
			}
			for _, y := range l.y {
				seen[y]++
			}
		}
		for k, c := range seen {
			p := 0.25
			if smp == train.SampleInstance {
				p = float64(counts[k]) / float64(sp.Labeled.N)
			}
			// 5 binomial standard deviations: a wrong sampler (0.25 vs
			// 0.02 for the rarest class) misses by far more.
			if sd := math.Sqrt(n * p * (1 - p)); math.Abs(c-n*p) > 5*sd {
				t.Errorf("%s sampling: class %d drawn %v times of %v, want %.0f ± %.0f", smp, k, c, n, n*p, 5*sd)
			}
		}
	}
}

// pretrain.loss = csst: the first epoch is plain CE (the same weights as CE
// pre-training), later epochs train with the linearisation's loss (the
// weights part); it is deterministic and refuses a nonlinear objective.
func TestPretrainCSST(t *testing.T) {
	sp := toySplit(4, 6, 90, 1)
	pre := func(c PretrainConfig) []model.Param {
		t.Helper()
		net := toyNet(t, sp, c.Batch)
		if err := Pretrain(context.Background(), net, sp, c, nil); err != nil {
			t.Fatal(err)
		}
		return net.Params()
	}
	ce := PretrainConfig{Epochs: 1, LR: 0.05, Batch: 16, Momentum: 0.9, WeightDecay: 5e-4, Seed: 3}
	cs := ce
	cs.CSST, cs.Objective, cs.Params = true, metric.MinRecall, loop.DefaultHyper().Params
	if !reflect.DeepEqual(pre(ce), pre(cs)) {
		t.Error("one epoch of csst pre-training differs from one of CE")
	}
	ce.Epochs, cs.Epochs = 3, 3
	a, b := pre(cs), pre(cs)
	if !reflect.DeepEqual(a, b) {
		t.Error("csst pre-training is not deterministic")
	}
	if reflect.DeepEqual(a, pre(ce)) {
		t.Error("three epochs of csst pre-training equal CE's: the loss was never used")
	}
	cs.Objective = metric.GMean
	err := Pretrain(context.Background(), toyNet(t, sp, 16), sp, cs, nil)
	if err == nil || !strings.Contains(err.Error(), "csst optimises objectives linear in the recalls; gmean is not") {
		t.Errorf("csst pre-training for gmean: %v", err)
	}
}

func TestSamplerNeverDrawsMaskedPairs(t *testing.T) {
	sp := toySplit(3, 5, 60, 2)
	l := toyLocal(t, sp, 16)
	// P with mass only on (2,0) and (1,1), zeros first and last.
	l.cum = []float64{0, 0, 0, 0, 0.25, 0.25, 1, 1, 1}
	seen := map[int]int{}
	for i := 0; i < 20000; i++ {
		seen[l.drawPair()]++
	}
	if len(seen) != 2 || seen[4] == 0 || seen[6] == 0 {
		t.Fatalf("drawn pairs %v, want only 4 and 6", seen)
	}
	if f := float64(seen[4]) / 20000; f < 0.23 || f > 0.27 {
		t.Errorf("pair (1,1) drawn with frequency %.3f, want 0.25", f)
	}
}

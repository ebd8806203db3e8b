package train

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"selmix/core/gain"
	"selmix/core/metric"
	"selmix/core/model"
)

func TestCSSTLossHand(t *testing.T) {
	// Mean recall s.t. coverage on metric's 2×2 case (λ = (0, Lm), s = 1/(Lm+1)):
	// L = [[s, s·Lm], [0, s(1+Lm)]], D = (s, s(1+Lm)),
	// M = L·D⁻¹ = [[1, Lm/(1+Lm)], [0, 1]], a = (−log s, −log(s(1+Lm))) = (−log s, 0).
	Lm := 100 * (1 - math.Exp(-7.5))
	s := 1 / (Lm + 1)
	for _, tc := range []struct {
		name       string
		L          []float64
		wantT, wan []float64
	}{
		{"coverage", []float64{s, s * Lm, 0, s * (1 + Lm)}, []float64{1, Lm / (1 + Lm), 0, 1}, []float64{-math.Log(s), 0}},
		// Uniform weights: M = I and equal adjustments, i.e. plain CE.
		{"uniform", []float64{0.5, 0, 0, 0.5}, []float64{1, 0, 0, 1}, []float64{math.Log(2), math.Log(2)}},
		// A diagonal entry below 1e-6 of the largest is clamped there.
		{"floor", []float64{2, 0, 0, 1e-12}, []float64{1, 0, 0, 1e-12 / 2e-6}, []float64{-math.Log(2), -math.Log(2e-6)}},
	} {
		T, a, err := CSSTLoss(mat.NewDense(2, 2, tc.L))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for i := range T {
			if math.Abs(T[i]-tc.wantT[i]) > 1e-12 {
				t.Errorf("%s: targets %v, want %v", tc.name, T, tc.wantT)
				break
			}
		}
		for i := range a {
			if math.Abs(a[i]-tc.wan[i]) > 1e-12 {
				t.Errorf("%s: adjustment %v, want %v", tc.name, a, tc.wan)
				break
			}
		}
	}
	for _, bad := range [][]float64{{0, 1, 1, 0}, {1, -1, 0, 1}, {math.NaN(), 0, 0, 1}} {
		if _, _, err := CSSTLoss(mat.NewDense(2, 2, bad)); err == nil {
			t.Errorf("CSSTLoss(%v) accepted", bad)
		}
	}
}

// Mean recall on a balanced validation set linearises to L = I: the CSST
// loss is plain cross-entropy, and a soft step with it is a CE step bit for
// bit (the same draws, the same arithmetic).
func TestCSSTUniformIsCE(t *testing.T) {
	C := mat.NewDense(2, 2, []float64{0.4, 0.1, 0.2, 0.3})
	T, a, err := CSSTObjectiveLoss(metric.MeanRecall, C, nil, DefaultHyper().Params(2))
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
	lc, err := ce.Train(&TrainRequest{Mode: ModeCE, LR: lr, Batch: 16, WeightDecay: 5e-4, Momentum: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := soft.Train(&TrainRequest{Mode: ModeSoft, Targets: eye, LR: lr, Batch: 16, WeightDecay: 5e-4, Momentum: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	if lc != ls || !reflect.DeepEqual(ce.Net().Params(), soft.Net().Params()) {
		t.Errorf("soft steps with T = I differ from CE steps: loss %v vs %v", ls, lc)
	}
}

func TestLASTargetsHand(t *testing.T) {
	// n = (100, 10, 1): n_min = 1, n_max = 100; ε_1 = 0.3, ε_K = 0.1.
	// ε_0 = 0.1 + 0.2·sin(π/2) = 0.3; ε_1 = 0.1 + 0.2·sin(π/2·9/99); ε_2 = 0.1.
	e1 := 0.1 + 0.2*math.Sin(math.Pi/2*9/99)
	want := []float64{
		0.7, 0.15, 0.15,
		e1 / 2, 1 - e1, e1 / 2,
		0.05, 0.05, 0.9,
	}
	got := LASTargets([]int{100, 10, 1}, 0.3, 0.1)
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-15 {
			t.Fatalf("LAS targets %v, want %v", got, want)
		}
	}
	// Equal counts: every class is the most frequent.
	if got := LASTargets([]int{5, 5}, 0.2, 0); !reflect.DeepEqual(got, []float64{0.8, 0.2, 0.2, 0.8}) {
		t.Errorf("balanced LAS targets %v, want ε_1 = 0.2 everywhere", got)
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
	for _, smp := range []Sampling{SampleClass, SampleInstance} {
		l := toyLocal(t, sp, B)
		seen := make([]float64, 4)
		for range steps {
			if _, err := l.Train(&TrainRequest{Mode: ModeSoft, Targets: eye, Sampling: smp, LR: []float64{1e-4}, Batch: B}); err != nil {
				t.Fatal(err)
			}
			for _, y := range l.y {
				seen[y]++
			}
		}
		for k, c := range seen {
			p := 0.25
			if smp == SampleInstance {
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

// The baselines run end to end on the toy problem: deterministic, P all
// zeros, and mislas2 leaves the backbone as it was.
func TestBaselinePoliciesRun(t *testing.T) {
	sp := toySplit(4, 6, 90, 1)
	initial := toyNet(t, sp, 16).Params()
	for _, pol := range []gain.Policy{gain.CSST, gain.MiSLAS2} {
		cfg := toyConfig()
		cfg.Policy = pol
		a, b := runToy(t, cfg, nil), runToy(t, cfg, nil)
		a.sum.Seconds, b.sum.Seconds = 0, 0
		if !reflect.DeepEqual(a.sum, b.sum) || !reflect.DeepEqual(a.params, b.params) {
			t.Errorf("%s: two runs with the same seed differ", pol)
		}
		for _, s := range a.events {
			if s.Kind == KindRefresh {
				for _, p := range s.Refresh.P {
					if p != 0 {
						t.Fatalf("%s: P has mass %v", pol, p)
					}
				}
			}
		}
		for i, p := range a.params {
			same := reflect.DeepEqual(p.Data, initial[i].Data)
			// Unchanged: the backbone under mislas2 only.
			if want := !strings.HasPrefix(p.Name, "head.") && pol == gain.MiSLAS2; same != want {
				t.Errorf("%s: %s unchanged = %v", pol, p.Name, same)
			}
		}
	}
}

// Switching to and between the baselines mid-run is a logged control like
// any other; csst with a nonlinear objective is refused either way round
// and the run goes on with what it had.
func TestBaselineControls(t *testing.T) {
	ctl := []Control{
		{Op: OpSet, Key: "policy", Value: "csst", At: 12},
		{Op: OpSet, Key: "objective", Value: "gmean", At: 20}, // refused: csst
		{Op: OpSet, Key: "objective", Value: "mean-recall@cov", At: 25},
		{Op: OpSet, Key: "policy", Value: "mislas2", At: 35},
		{Op: OpSet, Key: "objective", Value: "hmean", At: 40},
		{Op: OpSet, Key: "policy", Value: "csst", At: 45}, // refused: hmean
	}
	r := runToy(t, toyConfig(), ctl)
	var refused []int
	var final Snapshot
	for _, s := range r.events {
		if s.Kind == KindControl && s.Ack != nil && s.Ack.Err != "" {
			refused = append(refused, s.Ack.Step)
			if !strings.Contains(s.Ack.Err, "csst optimises objectives linear in the recalls") {
				t.Errorf("refusal at %d: %q", s.Ack.Step, s.Ack.Err)
			}
		}
		if s.Kind == KindFinal {
			final = s
		}
	}
	if !reflect.DeepEqual(refused, []int{20, 45}) {
		t.Errorf("refused at %v, want [20 45]", refused)
	}
	if final.Summary == nil || final.Summary.Steps != 60 || final.Hyper.Policy != gain.MiSLAS2 || final.Hyper.Objective != metric.HMean {
		t.Errorf("final %+v", final.Hyper)
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
	cs.CSST, cs.Objective, cs.Params = true, metric.MinRecall, DefaultHyper().Params
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

// The names go on the wire (docs/worker-protocol.md: "split", "mode",
// "sampling"); a value outside an enum names its kind and number.
func TestEnumNames(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{SplitVal.String(), "val"}, {SplitTest.String(), "test"}, {Split(2).String(), "split(2)"},
		{ModeMixup.String(), "mixup"}, {ModeCE.String(), "ce"}, {ModeSoft.String(), "soft"}, {Mode(-1).String(), "mode(-1)"},
		{SampleInstance.String(), "instance"}, {SampleClass.String(), "class"}, {Sampling(7).String(), "sampling(7)"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

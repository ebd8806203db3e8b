package train_test

import (
	"context"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"selmix/core/gain"
	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/core/train"
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
		T, a, err := train.CSSTLoss(mat.NewDense(2, 2, tc.L))
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
		if _, _, err := train.CSSTLoss(mat.NewDense(2, 2, bad)); err == nil {
			t.Errorf("CSSTLoss(%v) accepted", bad)
		}
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
	got := train.LASTargets([]int{100, 10, 1}, 0.3, 0.1)
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-15 {
			t.Fatalf("LAS targets %v, want %v", got, want)
		}
	}
	// Equal counts: every class is the most frequent.
	if got := train.LASTargets([]int{5, 5}, 0.2, 0); !reflect.DeepEqual(got, []float64{0.8, 0.2, 0.2, 0.8}) {
		t.Errorf("balanced LAS targets %v, want ε_1 = 0.2 everywhere", got)
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
			if s.Kind == loop.KindRefresh {
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
	ctl := []loop.Control{
		{Op: loop.OpSet, Key: "policy", Value: "csst", At: 12},
		{Op: loop.OpSet, Key: "objective", Value: "gmean", At: 20}, // refused: csst
		{Op: loop.OpSet, Key: "objective", Value: "mean-recall@cov", At: 25},
		{Op: loop.OpSet, Key: "policy", Value: "mislas2", At: 35},
		{Op: loop.OpSet, Key: "objective", Value: "hmean", At: 40},
		{Op: loop.OpSet, Key: "policy", Value: "csst", At: 45}, // refused: hmean
	}
	r := runToy(t, toyConfig(), ctl)
	var refused []int
	var final loop.Snapshot
	for _, s := range r.events {
		if s.Kind == loop.KindControl && s.Ack != nil && s.Ack.Err != "" {
			refused = append(refused, s.Ack.Step)
			if !strings.Contains(s.Ack.Err, "csst optimises objectives linear in the recalls") {
				t.Errorf("refusal at %d: %q", s.Ack.Step, s.Ack.Err)
			}
		}
		if s.Kind == loop.KindFinal {
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

// The names go on the wire (docs/worker-protocol.md: "split", "mode",
// "sampling"); a value outside an enum names its kind and number.
func TestEnumNames(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{train.SplitVal.String(), "val"}, {train.SplitTest.String(), "test"}, {train.Split(2).String(), "split(2)"},
		{train.ModeMixup.String(), "mixup"}, {train.ModeCE.String(), "ce"}, {train.ModeSoft.String(), "soft"}, {train.ModeResample.String(), "resample"}, {train.Mode(-1).String(), "mode(-1)"},
		{train.SampleInstance.String(), "instance"}, {train.SampleClass.String(), "class"}, {train.Sampling(7).String(), "sampling(7)"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// modeRecorder records the mode and P of every train request.
type modeRecorder struct {
	train.Trainer
	modes []train.Mode
	noP   int // requests that drew pairs without a K×K P
}

func (r *modeRecorder) Train(q *train.TrainRequest) (float64, error) {
	r.modes = append(r.modes, q.Mode)
	if len(q.P) != 16 {
		r.noP++
	}
	return r.Trainer.Train(q)
}

// Policy resample trains in ModeResample on the P SelMix would draw from
// at every refresh: softmax(s·G) over the positive gains of that
// refresh's G (with the run's gain norm) — the same first P as a selmix
// run's, which starts from the same model — and predicts no change of ψ:
// the linear model is of mixup steps.
func TestResamplePolicy(t *testing.T) {
	sp := toySplit(4, 6, 90, 1)
	cfg := toyConfig()
	cfg.Policy = gain.Resample
	rec := &modeRecorder{Trainer: toyLocal(t, sp, cfg.Batch)}
	e, err := train.New(cfg, rec)
	if err != nil {
		t.Fatal(err)
	}
	st := e.Subscribe()
	done := make(chan []loop.Snapshot)
	go func() {
		var ev []loop.Snapshot
		for s, ok := st.Next(context.Background()); ok; s, ok = st.Next(context.Background()) {
			if s.Kind == loop.KindRefresh {
				ev = append(ev, s)
			}
		}
		done <- ev
	}()
	if _, err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	refreshes := <-done
	if len(rec.modes) == 0 || rec.noP != 0 {
		t.Fatalf("%d train requests, %d without P", len(rec.modes), rec.noP)
	}
	for i, m := range rec.modes {
		if m != train.ModeResample {
			t.Fatalf("request %d in mode %s, want resample", i, m)
		}
	}
	if len(refreshes) != 7 { // steps 0, 10, …, 60
		t.Fatalf("%d refreshes, want 7", len(refreshes))
	}
	for _, s := range refreshes {
		rf := s.Refresh
		G := mat.NewDense(4, 4, slices.Clone(rf.G))
		var P mat.Dense
		gain.Distribution(&P, gain.Normalized(G, s.Hyper.GainNorm), rf.S, gain.SelMix)
		if !reflect.DeepEqual(P.RawMatrix().Data, rf.P) {
			t.Errorf("refresh at %d: P %v, want SelMix's %v", s.Step, rf.P, P.RawMatrix().Data)
		}
		if rf.Predicted != nil || rf.Realised != nil {
			t.Errorf("refresh at %d predicts a change of ψ; resample's steps are not mixup's", s.Step)
		}
	}
	sel := cfg
	sel.Policy = gain.SelMix
	first := func(r runResult) []float64 {
		for _, s := range r.events {
			if s.Kind == loop.KindRefresh {
				return s.Refresh.P
			}
		}
		return nil
	}
	if p := first(runToy(t, sel, nil)); !reflect.DeepEqual(p, refreshes[0].Refresh.P) {
		t.Errorf("first P: selmix %v, resample %v; both start from the same model", p, refreshes[0].Refresh.P)
	}
}

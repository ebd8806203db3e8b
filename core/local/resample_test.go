package local

import (
	"fmt"
	"math"
	"reflect"
	"testing"

	"selmix/core/data"
	"selmix/core/model"
	"selmix/core/train"
)

// resampleP is a P over K = 3 classes with zeros, a dominant pair and
// pairs of a class with itself.
var resampleP = []float64{
	0.05, 0, 0.30,
	0.10, 0.15, 0,
	0.25, 0.05, 0.10,
}

// rowClass maps each labeled row's bytes to its class, so that a drawn
// row's class is read from the data, not from the sampler.
func rowClass(set *data.Set) map[string]int {
	m := map[string]int{}
	for i := range set.N {
		m[fmt.Sprint(set.Row(i))] = set.Y[i]
	}
	return m
}

// A resample step trains on 2B rows: x1 of class y1 with label y1 and x2
// of class y2 with label y2, the pairs (y1, y2) drawn from P. Over many
// steps the pair frequencies, read from the rows' own classes in the data,
// match P, and no pair of zero mass is ever drawn.
func TestResamplePairFrequencies(t *testing.T) {
	sp := toySplit(3, 5, 90, 4)
	const B, steps = 64, 300
	l := toyLocal(t, sp, B)
	class := rowClass(&sp.Labeled)
	in := sp.Labeled.Dim
	seen := make([]float64, 9)
	for range steps {
		if _, err := l.Train(&train.TrainRequest{Mode: train.ModeResample, P: resampleP, LR: []float64{0}, Batch: B, BetaMin: 0.6}); err != nil {
			t.Fatal(err)
		}
		if len(l.xx) != 2*B*in || len(l.yy) != 2*B {
			t.Fatalf("a step of batch %d trained on %d rows, want %d", B, len(l.yy), 2*B)
		}
		for i := range 2 * B {
			c, ok := class[fmt.Sprint(l.xx[i*in:(i+1)*in])]
			if !ok || c != l.yy[i] {
				t.Fatalf("row %d has label %d but is a sample of class %d (found %v)", i, l.yy[i], c, ok)
			}
		}
		for i := range B {
			seen[l.yy[i]*3+l.yy[B+i]]++
		}
	}
	n := float64(B * steps)
	for k, p := range resampleP {
		if p == 0 {
			if seen[k] != 0 {
				t.Errorf("pair (%d, %d) of zero mass drawn %v times", k/3, k%3, seen[k])
			}
			continue
		}
		// 5 binomial standard deviations: at n = 19200 that is ±0.011 on
		// the frequency of a pair of mass 0.3.
		if sd := math.Sqrt(n * p * (1 - p)); math.Abs(seen[k]-n*p) > 5*sd {
			t.Errorf("pair (%d, %d) drawn %v times of %v, want %.0f ± %.0f", k/3, k%3, seen[k], n, n*p, 5*sd)
		}
	}
}

// Resample draws what mixup draws: from the same sampler state a mixup
// step and a resample step see the same x1, x2 and labels y1 (β is drawn
// and not used), so the random stream is mixup's.
func TestResampleDrawsMixupsSamples(t *testing.T) {
	sp := toySplit(3, 5, 90, 4)
	const B = 16
	mix, res := toyLocal(t, sp, B), toyLocal(t, sp, B)
	for range 3 {
		if _, err := mix.Train(&train.TrainRequest{Mode: train.ModeMixup, P: resampleP, LR: []float64{0}, Batch: B, BetaMin: 0.6}); err != nil {
			t.Fatal(err)
		}
		if _, err := res.Train(&train.TrainRequest{Mode: train.ModeResample, P: resampleP, LR: []float64{0}, Batch: B, BetaMin: 0.6}); err != nil {
			t.Fatal(err)
		}
		in := sp.Labeled.Dim
		if !reflect.DeepEqual(mix.x1, res.xx[:B*in]) || !reflect.DeepEqual(mix.x2, res.xx[B*in:]) || !reflect.DeepEqual(mix.y, res.yy[:B]) {
			t.Fatal("a resample step drew other samples than the mixup step from the same state")
		}
	}
}

// One resample step on a linear model (identity features, float64) equals
// a hand computation: loss = (1/2B) Σ_r −log softmax(x_r·W + b)_{y_r} over
// the 2B rows, and with momentum and weight decay 0, W ← W − η·(1/2B)
// Σ_r x_rᵀ(p_r − e_{y_r}), b ← b − η·(1/2B) Σ_r (p_r − e_{y_r}).
func TestResampleStepByHand(t *testing.T) {
	sp := toySplit(3, 5, 60, 6)
	const B, K, eta = 8, 3, 0.5
	net, err := model.New(model.Config{Arch: "identity", In: sp.Labeled.Dim, Classes: K, Batch: B, EvalBatch: 64, Seed: 5, Dtype: "float64"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(net, sp, 11)
	if err != nil {
		t.Fatal(err)
	}
	W0, b0 := net.Head()
	loss, err := l.Train(&train.TrainRequest{Mode: train.ModeResample, P: resampleP, LR: []float64{eta}, Batch: B, BetaMin: 0.6})
	if err != nil {
		t.Fatal(err)
	}
	d := sp.Labeled.Dim
	rows := 2 * B
	W, b := append([]float64(nil), W0...), append([]float64(nil), b0...)
	var want float64
	for r := range rows {
		x := l.xx[r*d : (r+1)*d]
		z := make([]float64, K)
		for k := range K {
			z[k] = b0[k]
			for j := range d {
				z[k] += float64(x[j]) * W0[j*K+k]
			}
		}
		zmax := math.Max(z[0], math.Max(z[1], z[2]))
		var s float64
		for _, v := range z {
			s += math.Exp(v - zmax)
		}
		want += -(z[l.yy[r]] - zmax - math.Log(s)) / float64(rows)
		for k := range K {
			g := math.Exp(z[k]-zmax) / s
			if k == l.yy[r] {
				g--
			}
			g /= float64(rows)
			b[k] -= eta * g
			for j := range d {
				W[j*K+k] -= eta * g * float64(x[j])
			}
		}
	}
	if math.Abs(loss-want) > 1e-9 {
		t.Errorf("loss %.12f, want %.12f (CE over the %d rows)", loss, want, rows)
	}
	gotW, gotB := net.Head()
	for i := range W {
		if math.Abs(gotW[i]-W[i]) > 1e-9 {
			t.Fatalf("W[%d] = %.12f after the step, want %.12f", i, gotW[i], W[i])
		}
	}
	for k := range b {
		if math.Abs(gotB[k]-b[k]) > 1e-9 {
			t.Fatalf("b[%d] = %.12f after the step, want %.12f", k, gotB[k], b[k])
		}
	}
	// Both halves carry their own labels: x2's are the pairs' y2, which
	// differ from y1 somewhere in a batch drawn from this P.
	differ := false
	for i := range B {
		differ = differ || l.yy[i] != l.yy[B+i]
	}
	if !differ {
		t.Error("every pair drawn had y1 = y2; the test does not tell x2's label from x1's")
	}
}

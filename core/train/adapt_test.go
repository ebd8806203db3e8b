package train

import (
	"math"
	"testing"
)

// The radius halves on an interval that realised less than a quarter of
// its prediction (the wrong sign included), grows by half on one that
// held, stays within its bounds, and ignores intervals without a
// prediction or with one too small to judge.
func TestAdapterLearns(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	a := adapter{Radius: 0.1}
	for _, c := range []struct {
		pred, real *float64
		want       float64
	}{
		{f(0.4), f(0.2), 0.15},    // held: ×1.5
		{f(0.4), f(-0.1), 0.075},  // wrong sign: ÷2
		{f(0.4), f(0.05), 0.0375}, // an eighth of it: ÷2
		{nil, f(0.3), 0.0375},     // nothing to judge
		{f(1e-9), f(-1), 0.0375},  // too small a prediction to judge
	} {
		a.learn(c.pred, c.real)
		if math.Abs(a.Radius-c.want) > 1e-15 {
			t.Fatalf("after pred %v real %v: radius %v, want %v", deref(c.pred), deref(c.real), a.Radius, c.want)
		}
	}
	for range 40 {
		a.learn(f(1), f(-1))
	}
	if a.Radius != radiusMin {
		t.Errorf("radius fell to %v, below its floor %v", a.Radius, radiusMin)
	}
	for range 40 {
		a.learn(f(1), f(1))
	}
	if a.Radius != radiusMax {
		t.Errorf("radius rose to %v, beyond its ceiling %v", a.Radius, radiusMax)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

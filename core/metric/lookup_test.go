package metric

import (
	"math"
	"testing"
)

// Index and In look objectives up in Objectives() order, the order of every
// per-objective series; an unknown objective or a short series is NaN.
func TestObjectiveIndexIn(t *testing.T) {
	objs := Objectives()
	vals := make([]float64, len(objs))
	for i := range vals {
		vals[i] = float64(10 + i)
	}
	for i, o := range objs {
		if got := o.Index(); got != i {
			t.Errorf("%s.Index() = %d, want %d", o, got, i)
		}
		if got := o.In(vals); got != float64(10+i) {
			t.Errorf("%s.In(vals) = %v, want %v", o, got, 10+i)
		}
	}
	if got := Objective("nope").Index(); got != -1 {
		t.Errorf("unknown objective: Index() = %d, want -1", got)
	}
	last := objs[len(objs)-1]
	for _, c := range []struct {
		name string
		o    Objective
		vals []float64
	}{
		{"unknown objective", "nope", vals},
		{"series stops short", last, vals[:len(vals)-1]},
		{"no series", MinRecall, nil},
	} {
		if got := c.o.In(c.vals); !math.IsNaN(got) {
			t.Errorf("%s: In = %v, want NaN", c.name, got)
		}
	}
}

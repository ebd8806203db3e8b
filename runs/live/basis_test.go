package live

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"selmix/core/loop"
	"selmix/core/metric"
)

func testBasis() *loop.Basis {
	return &loop.Basis{
		Stats: loop.Stats{
			C: mat.NewDense(2, 2, []float64{0.4, 0.1, 1.0 / 3, 0.2}), Z: mat.NewDense(2, 3, []float64{1, -2, math.Pi, 0, 1e-300, 7}),
			W: mat.NewDense(3, 2, []float64{0.1, 0.2, 0.3, -0.4, 0.5, math.E}), B: []float64{-1.5, 2.25},
			Tail: []bool{false, true}, N: 90,
		},
		Step: 20, Steps: 60, Momentum: 0.9,
	}
}

// A client that asks for statistics gets each refresh's Basis exactly
// (float64), once per evaluation: a control's snapshot of the same
// evaluation carries it from the refresh's; a client that did not ask
// gets none.
func TestBasisOnTheSocket(t *testing.T) {
	dir, eng, srv := serveFake(t)
	defer srv.Close()
	with, err := Dial(dir, Hello{Stats: true})
	if err != nil {
		t.Fatal(err)
	}
	defer with.Close()
	without, err := Dial(dir, Hello{})
	if err != nil {
		t.Fatal(err)
	}
	defer without.Close()
	eng.waitSubs(t, 2)
	b := testBasis()
	rep := metric.Report{K: 2, Prior: []float64{0.5, 0.5}, Recall: []float64{0.8, 0.6}, Coverage: []float64{0.5, 0.5}}
	rs := &loop.Refresh{Step: 20, K: 2, Report: rep, Basis: b}
	go func() {
		eng.publish(loop.Snapshot{Kind: loop.KindRefresh, Step: 20, Refresh: rs})
		rs2 := *rs
		rs2.S = 20
		eng.publish(loop.Snapshot{Kind: loop.KindControl, Step: 20, Refresh: &rs2,
			Ack: &loop.Ack{Control: loop.Control{Op: loop.OpSet, Key: "s", Value: "20"}, Step: 20}})
		eng.publish(loop.Snapshot{Kind: loop.KindStep, Step: 21, Refresh: &rs2})
		eng.end()
	}()
	var got []*loop.Basis
	for {
		s, ok := with.Next(context.Background())
		if !ok {
			break
		}
		if s.Refresh == nil {
			t.Fatalf("%s snapshot without its refresh", s.Kind)
		}
		got = append(got, s.Refresh.Basis)
	}
	if len(got) != 3 {
		t.Fatalf("%d snapshots, want 3", len(got))
	}
	for i, g := range got {
		if g == nil || !reflect.DeepEqual(*g, *b) {
			t.Errorf("snapshot %d: basis %+v, want %+v", i, g, b)
		}
	}
	for {
		s, ok := without.Next(context.Background())
		if !ok {
			break
		}
		if s.Refresh != nil && s.Refresh.Basis != nil {
			t.Errorf("a client that did not ask got the statistics at step %d", s.Step)
		}
	}
}

// Statistics from the socket are checked before a forecast uses them.
func TestBasisRefused(t *testing.T) {
	good := wireBasis(testBasis())
	nan := *good
	nan.W = packF64([]float64{0.1, 0.2, math.NaN(), 0, 0, 0})
	short := *good
	short.B = packF64([]float64{1})
	tail := *good
	tail.Tail = []bool{true}
	big := *good
	big.K, big.D = 1<<10, 1<<10
	mom := *good
	mom.Momentum = 1
	for name, c := range map[string]struct {
		w    BasisData
		want string
	}{
		"NaN": {nan, "w: value 2 is NaN"}, "short": {short, "b: 8 bytes"}, "tail": {tail, "tail has 1 values"},
		"too large": {big, "1024 classes × 1024 features"}, "momentum": {mom, "momentum 1"},
	} {
		if _, err := c.w.Basis(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", name, err, c.want)
		}
	}
	if wireBasis(&loop.Basis{Stats: loop.Stats{C: mat.NewDense(1000, 1000, nil), Z: mat.NewDense(1000, 100, nil)}}) != nil {
		t.Error("a basis past MaxBasis was packed")
	}
	line, _ := json.Marshal(good)
	if strings.Contains(string(line), "null") {
		t.Errorf("basis line %s", line)
	}
}

// A client that attaches to a run gets, with the first snapshot (where the
// run stands), the last refresh's evaluation, matrices and statistics, so
// the workbench forecasts on a paused run without a step (issue 46: "no
// forecast: no statistics of the last refresh: they come with the next
// one").
func TestAttachBringsLastRefresh(t *testing.T) {
	dir, eng, srv := serveFake(t)
	defer srv.Close()
	c, err := Dial(dir, Hello{Stats: true, Matrices: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	eng.waitSubs(t, 1)
	rep := metric.Report{K: 2, Prior: []float64{0.5, 0.5}, Recall: []float64{0.8, 0.6}, Coverage: []float64{0.5, 0.5}}
	rs := &loop.Refresh{Step: 20, K: 2, Report: rep, Basis: testBasis(), G: []float64{1, 2, 3, 4}, P: []float64{0.25, 0.25, 0.25, 0.25}}
	// What train.Engine publishes first to a subscriber: where the run
	// stands, as a step snapshot.
	eng.publish(loop.Snapshot{Kind: loop.KindStep, Step: 23, State: loop.Paused, Refresh: rs})
	eng.publish(loop.Snapshot{Kind: loop.KindStep, Step: 24, State: loop.Paused, Refresh: rs})
	eng.end()
	s, ok := c.Next(context.Background())
	if !ok || s.Refresh == nil || s.Refresh.Basis == nil || len(s.Refresh.G) != 4 {
		t.Fatalf("first snapshot %+v (ok %v): want the last refresh with its statistics and matrices", s, ok)
	}
	if !reflect.DeepEqual(*s.Refresh.Basis, *rs.Basis) {
		t.Errorf("basis %+v, want %+v", s.Refresh.Basis, rs.Basis)
	}
}

package record

import (
	"encoding/json"
	"math"
	"time"

	"path/filepath"
	"reflect"
	"testing"

	"selmix/core/loop"
	"selmix/runs"
)

// upgrade rewrites a format-1 run as format 2 under dstRoot, event by
// event, through the same conversions the reader uses (G and P become
// float32), and returns the new run's id. Tests use it to check that both
// formats read alike; TestUpgradeVizFixtures makes viz's fixtures with it.
func upgrade(t testing.TB, src *runs.Run, dstRoot string) string {
	t.Helper()
	evs, warns, err := src.Events()
	if err != nil || len(warns) > 0 {
		t.Fatalf("%s: %v %v", src.Dir, err, warns)
	}
	cfg, err := src.Config()
	if err != nil {
		t.Fatal(err)
	}
	w, err := runs.Create(dstRoot, src.Meta.Name, cfg, runs.Meta{Status: runs.StatusRunning})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, ev := range evs {
		var data any = json.RawMessage(ev.Data)
		var records [][]runs.Array
		switch ev.Kind {
		case KindRefresh:
			d, arrs, err := decodeV1Refresh(ev.Data)
			if err != nil {
				t.Fatal(err)
			}
			for i := range arrs[1:] {
				for j := range arrs[1+i] {
					arrs[1+i][j].DType = runs.Float32
				}
			}
			data, records = d, arrs
		case KindControl:
			if data, err = decodeV1Control(ev.Data); err != nil {
				t.Fatal(err)
			}
		case KindFinal:
			d, err := decodeV1Summary(ev.Data)
			if err != nil {
				t.Fatal(err)
			}
			data = d
			b, _ := json.MarshalIndent(d, "", "  ")
			if err := w.WriteSummary(append(b, '\n')); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.AppendArrays(ev.Kind, ev.Step, data, records, true); err != nil {
			t.Fatal(err)
		}
	}
	m := src.Meta
	if err := w.SetMeta(func(n *runs.Meta) {
		n.Status, n.Objective, n.Policy, n.Steps, n.Best, n.BestStep = m.Status, m.Objective, m.Policy, m.Steps, m.Best, m.BestStep
		n.Parent, n.ParentStep, n.Pinned = m.Parent, m.ParentStep, m.Pinned
	}); err != nil {
		t.Fatal(err)
	}
	return w.ID()
}

// A format-1 run and its format-2 rewrite read as the same history, but
// for G and P, which format 2 keeps as float32.
func TestFormat1And2ReadAlike(t *testing.T) {
	root := filepath.Join("testdata", "v1run")
	dst := t.TempDir()
	for _, id := range []string{"20261123-1013-2bd9", "20261123-1019-6769"} {
		r1, h1 := open(t, root, id)
		_, h2 := open(t, dst, upgrade(t, r1, dst))
		if h2.Format != 2 || len(h2.Refreshes) != len(h1.Refreshes) {
			t.Fatalf("%s: format %d, %d refreshes; want 2, %d", id, h2.Format, len(h2.Refreshes), len(h1.Refreshes))
		}
		for i := range h1.Refreshes {
			G1, P1, _ := h1.Matrices(i)
			G2, P2, err := h2.Matrices(i)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(G2, f32(G1)) || !reflect.DeepEqual(P2, f32(P1)) {
				t.Errorf("%s refresh %d: G, P are not float32(format 1's)", id, i)
			}
			a, b := h1.Refreshes[i], h2.Refreshes[i]
			a.Stats.G, a.Stats.P, a.matrices, b.matrices = nil, nil, nil, nil
			a.Time, b.Time = time.Time{}, time.Time{} // an upgrade writes its events now
			a.Stats.Objectives, b.Stats.Objectives = marked(a.Stats.Objectives), marked(b.Stats.Objectives)
			if !reflect.DeepEqual(a, b) {
				t.Errorf("%s refresh %d differs:\n format 1 %+v\n format 2 %+v", id, i, a, b)
			}
		}
		h1.Refreshes, h2.Refreshes = nil, nil
		h1.Format, h2.Format, h1.arrays, h2.arrays = 0, 0, "", ""
		h1.FinalTime, h2.FinalTime = time.Time{}, time.Time{}
		for _, f := range []*loop.Summary{h1.Final, h2.Final} {
			if f != nil {
				f.TestObjBefore, f.TestObjAfter = marked(f.TestObjBefore), marked(f.TestObjAfter)
			}
		}
		if !reflect.DeepEqual(h1, h2) {
			t.Errorf("%s: histories differ:\n format 1 %+v\n format 2 %+v", id, h1, h2)
		}
	}
}

// marked copies xs with NaN — an objective added after the run was
// recorded, in either format — as a value DeepEqual can compare.
func marked(xs []float64) []float64 {
	if xs == nil {
		return nil
	}
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = x
		if math.IsNaN(x) {
			out[i] = -math.MaxFloat64
		}
	}
	return out
}

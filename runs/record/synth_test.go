package record

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"selmix/core/experiment"
	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/runs"
)

// synth makes the snapshots of a run without training: n refreshes of K
// classes, one every `every` steps, with random but well-formed numbers
// (recalls in (0, 1), P a distribution), a control before the second
// refresh, and a final summary. It is how tests and benchmarks get runs
// of any size, K = 1000 included, in a second.
func synth(K, n, every int, seed uint64) []loop.Snapshot {
	rng := rand.New(rand.NewPCG(seed, 1))
	total := (n - 1) * every
	h := loop.DefaultHyper()
	h.Refresh = every
	var out []loop.Snapshot
	var first metric.Report
	vec := func(f func(i int) float64) []float64 {
		v := make([]float64, K)
		for i := range v {
			v[i] = f(i)
		}
		return v
	}
	report := func() metric.Report {
		r := metric.Report{K: K,
			Prior:    vec(func(int) float64 { return 1 / float64(K) }),
			Recall:   vec(func(int) float64 { return rng.Float64() }),
			Coverage: vec(func(int) float64 { return rng.Float64() * 2 / float64(K) }),
		}
		r.MeanRecall, r.MinRecall, r.Worst = 0, 1, 0
		for i, x := range r.Recall {
			r.MeanRecall += x / float64(K)
			if x < r.MinRecall {
				r.MinRecall, r.Worst = x, i
			}
		}
		r.HMean, r.GMean, r.Accuracy = rng.Float64(), rng.Float64(), r.MeanRecall
		r.MinCoverage, r.HeadRecall, r.TailRecall = rng.Float64()/float64(K), rng.Float64(), rng.Float64()
		r.MinHTRecall, r.HeadCoverage, r.TailCoverage, r.MinHTCoverage = rng.Float64(), rng.Float64(), rng.Float64(), rng.Float64()
		return r
	}
	objs := func() []float64 {
		v := make([]float64, len(metric.Objectives()))
		for i := range v {
			v[i] = rng.NormFloat64()
		}
		return v
	}
	for i := range n {
		step := i * every
		if i == 1 {
			h.S = 20
			out = append(out, loop.Snapshot{Kind: loop.KindControl, Step: step, Total: total, State: loop.Running, Hyper: h,
				Ack: &loop.Ack{Control: loop.Control{Op: loop.OpSet, Key: "s", Value: "20"}, Step: step}})
		}
		G := make([]float64, K*K)
		P := make([]float64, K*K)
		sum := 0.0
		for j := range G {
			G[j] = rng.NormFloat64() * 0.1
			P[j] = math.Exp(h.S * G[j])
			sum += P[j]
		}
		for j := range P {
			P[j] /= sum
		}
		rs := &loop.Refresh{Step: step, Report: report(), Objectives: objs(), K: K, S: h.S, G: G, P: P,
			Lambda: vec(func(int) float64 { return rng.Float64() / float64(K) }),
			Aims:   vec(func(int) float64 { return (0.95 + 0.05*rng.Float64()) / float64(K) })}
		rs.Psi = rs.Objectives[1]
		if i == 0 {
			first = rs.Report
		}
		loss := math.NaN()
		if i > 0 {
			loss = 1 / float64(i)
		}
		state := loop.Running
		out = append(out, loop.Snapshot{Kind: loop.KindRefresh, Step: step, Total: total, State: state, Hyper: h, Loss: loss, Refresh: rs})
	}
	last := out[len(out)-1]
	sum := &loop.Summary{Steps: total, Objective: h.Objective, ValBefore: first, ValAfter: last.Refresh.Report,
		TestBefore: report(), TestAfter: report(), TestObjBefore: objs(), TestObjAfter: objs(), Seconds: 12.5}
	out = append(out, loop.Snapshot{Kind: loop.KindFinal, Step: total, Total: total, State: loop.Finished, Hyper: h, Refresh: last.Refresh, Summary: sum})
	return judged(out)
}

// judged flags each refresh that takes a new best, as the engine does
// (loop.Refresh.Best), written apart from it: a ψ that is a number and
// beats the best so far of its own objective, or the first of an
// objective that has none.
func judged(snaps []loop.Snapshot) []loop.Snapshot {
	var obj metric.Objective
	best, have := 0.0, false
	for k := range snaps {
		s := &snaps[k]
		if s.Kind != loop.KindRefresh {
			continue
		}
		rs := *s.Refresh
		o, p := s.Hyper.Objective, rs.Psi
		rs.Best = !math.IsNaN(p) && (!have || o != obj || p > best)
		if rs.Best {
			obj, best, have = o, p, true
		}
		s.Refresh = &rs
	}
	return snaps
}

// synthStart is the start event of a synth run.
func synthStart(K, total int) Start {
	names := make([]string, K)
	counts := make([]int, K)
	for i := range names {
		names[i] = "c" + string(rune('a'+i%26))
		counts[i] = 1000 - i%1000
	}
	return Start{Step: 0, Total: total, K: K, ClassNames: names, TrainCounts: counts}
}

// record writes snaps as a new run under root with the given config,
// recorded as its [record] says, and returns its id.
func record(t testing.TB, root, config string, K int, snaps []loop.Snapshot) string {
	t.Helper()
	c, err := experiment.ReadRecorded(config, "config.toml")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := New(root, "synth", config, OptionsOf(c.Record), runs.Meta{Objective: "min-recall", Policy: "selmix"})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.LogStart(synthStart(K, snaps[len(snaps)-1].Total)); err != nil {
		t.Fatal(err)
	}
	feed(t, rec, snaps)
	if err := rec.Close(false); err != nil {
		t.Fatal(err)
	}
	return rec.Writer().ID()
}

// feed has rec follow a stream carrying snaps.
func feed(t testing.TB, rec *Recorder, snaps []loop.Snapshot) {
	t.Helper()
	st := loop.NewStream()
	done := make(chan error, 1)
	go func() { done <- rec.Follow(context.Background(), st, nil) }()
	for _, s := range snaps {
		st.Publish(s)
	}
	st.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func runMeta() runs.Meta { return runs.Meta{Objective: "min-recall", Policy: "selmix"} }

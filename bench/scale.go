// Package bench holds selmix's measurement suites: the scale benchmark
// (the paper's K = 100 and K = 1000 on synthetic features) and the
// PyTorch references in this folder.
package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"selmix/core/data"
	"selmix/core/gain"
	"selmix/core/local"
	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/core/model"
	"selmix/core/npy"
	"selmix/core/train"
	"selmix/runs"
	"selmix/runs/record"
)

// ScaleCase is one synthetic problem: long-tailed Gaussian clusters of
// features, N1 samples of the most frequent class falling to N1/ρ (ρ =
// 100), ValPer and TestPer samples per class.
type ScaleCase struct {
	K, D            int
	N1              int
	ValPer, TestPer int
	Steps           int // fine-tuning steps of the measured run
}

// The paper's scales: CIFAR-100-LT (K = 100) and ImageNet-1k-LT (K = 1000;
// N1 = 500 gives 107 140 training samples).
var (
	ScaleK100  = ScaleCase{K: 100, D: 128, N1: 500, ValPer: 100, TestPer: 100, Steps: 1000}
	ScaleK1000 = ScaleCase{K: 1000, D: 512, N1: 500, ValPer: 20, TestPer: 50, Steps: 600}
)

// Targets of issue "the paper's scales" (docs/performance.md).
const (
	targetEventsPerRefresh = 100 << 10 // bytes of JSON
	targetArraysPerRefresh = 8.1e6     // bytes
	targetOpenSeconds      = 2
	targetOpenRSS          = 500 << 20
	targetExportSeconds    = 5
	targetRunRSS           = 1.5 * (1 << 30)
	targetRefreshSeconds   = 0.5
	targetHeadStepMS       = 0.10
)

// Row is one measured figure.
type Row struct {
	What, Measured, Target string
	OK                     bool
}

// ScaleOptions says where the scale benchmark works and with what binary.
type ScaleOptions struct {
	Dir    string // scratch folder for the features and the runs
	Binary string // the selmix binary to measure
	Cases  []ScaleCase
	Log    io.Writer // progress lines
	Torch  string    // a python with torch for the PyTorch head-step reference; "" = skip
}

// Scale measures every figure of the scale targets for each case, and the
// head-only step at K = 10, d = 64, B = 128 beside PyTorch's.
func Scale(ctx context.Context, o ScaleOptions) ([]Row, error) {
	var rows []Row
	for _, c := range o.Cases {
		r, err := scaleCase(ctx, o, c)
		if err != nil {
			return rows, fmt.Errorf("K=%d: %w", c.K, err)
		}
		rows = append(rows, r...)
	}
	ms, err := HeadStepMS(10, 64, 128, 3000)
	if err != nil {
		return rows, err
	}
	ref := ""
	if o.Torch != "" {
		if t, err := torchHeadStepMS(ctx, o.Torch); err == nil {
			ref = fmt.Sprintf(" (PyTorch, 1 thread, same sitting: %.3f ms; ratio %.2f)", t, ms/t)
		} else {
			fmt.Fprintf(o.Log, "PyTorch reference not measured: %v\n", err)
		}
	}
	rows = append(rows, Row{"head-only SelMix step, K=10, d=64, B=128", fmt.Sprintf("%.3f ms%s", ms, ref),
		fmt.Sprintf("≤ %.2f ms", targetHeadStepMS), ms <= targetHeadStepMS})
	return rows, nil
}

func scaleCase(ctx context.Context, o ScaleOptions, c ScaleCase) ([]Row, error) {
	dir := filepath.Join(o.Dir, fmt.Sprintf("k%d", c.K))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Log, "K=%d, d=%d: writing features…\n", c.K, c.D)
	n, err := WriteFeatures(dir, c, 1)
	if err != nil {
		return nil, err
	}
	tag := fmt.Sprintf("K=%d, d=%d", c.K, c.D)
	root := filepath.Join(dir, "runs")
	args := []string{"run", "--headless", "-q", "--runs", root,
		"--set", "data.source=features", "--set", "model.arch=identity",
		"--set", "data.train=" + filepath.Join(dir, "train.npz"), "--set", "data.val=" + filepath.Join(dir, "val.npz"),
		"--set", "data.test=" + filepath.Join(dir, "test.npz"), "--set", "data.head=" + filepath.Join(dir, "head.npz"),
		"--set", fmt.Sprintf("finetune.steps=%d", c.Steps), "--set", "finetune.refresh=50", "--set", "record.plots=false"}
	fmt.Fprintf(o.Log, "%s: a %d-step run on %d training samples…\n", tag, c.Steps, n)
	out, run, err := measure(ctx, o.Binary, args...)
	if err != nil {
		return nil, fmt.Errorf("selmix run: %v\n%s", err, out)
	}
	rs, err := runs.List(root)
	if err != nil || len(rs) == 0 {
		return nil, fmt.Errorf("no run recorded in %s: %v", root, err)
	}
	r := rs[len(rs)-1]
	h, err := record.Load(&r)
	if err != nil {
		return nil, err
	}
	nref := len(h.Refreshes)
	ev, _ := os.Stat(filepath.Join(r.Dir, "events.jsonl"))
	ar, _ := os.Stat(runs.ArraysPath(r.Dir))
	fmt.Fprintf(o.Log, "%s: opening and exporting run %s…\n", tag, r.Meta.ID)
	_, open, err := measure(ctx, o.Binary, "open", "--runs", root, r.Meta.ID, "--print", "160x50")
	if err != nil {
		return nil, fmt.Errorf("selmix open: %v", err)
	}
	_, export, err := measure(ctx, o.Binary, "export", "--runs", root, r.Meta.ID, "--out", filepath.Join(dir, "plots"))
	if err != nil {
		return nil, fmt.Errorf("selmix export: %v", err)
	}
	fmt.Fprintf(o.Log, "%s: timing refreshes in process…\n", tag)
	refresh, err := RefreshSeconds(dir, 5)
	if err != nil {
		return nil, err
	}
	perEvents, perArrays := float64(ev.Size())/float64(nref), float64(ar.Size())/float64(nref)
	return []Row{
		{tag + ": events.jsonl per refresh", fmt.Sprintf("%.1f KB (%d refreshes)", perEvents/1024, nref), "≤ 100 KB", perEvents <= targetEventsPerRefresh},
		{tag + ": arrays.bin per refresh", fmt.Sprintf("%.2f MB", perArrays/1e6), "≤ 8.1 MB", perArrays <= targetArraysPerRefresh},
		{tag + ": `selmix open`, first full screen (160×50)", fmt.Sprintf("%.2f s, %.0f MB RSS", open.wall.Seconds(), mb(open.rss)), "≤ 2 s, ≤ 500 MB",
			open.wall.Seconds() <= targetOpenSeconds && open.rss <= targetOpenRSS},
		{tag + ": plot export (`selmix export`, as after a run)", fmt.Sprintf("%.2f s", export.wall.Seconds()), "≤ 5 s", export.wall.Seconds() <= targetExportSeconds},
		{tag + ": process RSS during the run", fmt.Sprintf("%.0f MB (%d-step run: %.1f s wall)", mb(run.rss), c.Steps, run.wall.Seconds()), "≤ 1.5 GB", float64(run.rss) <= targetRunRSS},
		{tag + fmt.Sprintf(": one refresh (val forward %d, C, Z, D, G, P)", c.K*c.ValPer), fmt.Sprintf("%.3f s (median of 5)", refresh), "≤ 0.5 s", refresh <= targetRefreshSeconds},
	}, nil
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

type usage struct {
	wall time.Duration
	rss  int64 // peak resident memory, bytes
}

// measure runs the binary and returns its output, wall time and peak RSS.
func measure(ctx context.Context, bin string, args ...string) (string, usage, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	t := time.Now()
	err := cmd.Run()
	u := usage{wall: time.Since(t)}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		u.rss = ru.Maxrss << 10 // Linux reports KiB
	}
	return out.String(), u, err
}

// Split makes a case's problem in memory: long-tailed Gaussian clusters
// around standard-normal class means, and the nearest-class-mean head
// (W = the class means, b = −|μ|²/2).
func Split(c ScaleCase, seed uint64) (*data.Split, *data.Head) {
	rng := rand.New(rand.NewPCG(seed, 0x5ca1e))
	means := make([]float64, c.K*c.D)
	for i := range means {
		means[i] = rng.NormFloat64()
	}
	// Noise that leaves nearest-mean far from perfect: σ grows with √d.
	sigma := 0.45 * math.Sqrt(float64(c.D))
	gen := func(counts []int) data.Set {
		n := 0
		for _, v := range counts {
			n += v
		}
		s := data.Set{N: n, Dim: c.D, X: make([]float32, 0, n*c.D), Y: make([]int, 0, n)}
		for k, m := range counts {
			mu := means[k*c.D : (k+1)*c.D]
			for range m {
				for _, v := range mu {
					s.X = append(s.X, float32(v+sigma*rng.NormFloat64()))
				}
				s.Y = append(s.Y, k)
			}
		}
		return s
	}
	counts, val, test := make([]int, c.K), make([]int, c.K), make([]int, c.K)
	for k := range counts {
		counts[k] = max(2, int(float64(c.N1)*math.Pow(100, -float64(k)/float64(c.K-1))))
		val[k], test[k] = c.ValPer, c.TestPer
	}
	sp := &data.Split{K: c.K, Labeled: gen(counts), Val: gen(val), Test: gen(test), TrainCounts: counts}
	head := &data.Head{W: make([]float64, c.D*c.K), B: make([]float64, c.K), D: c.D, K: c.K}
	for k := range c.K {
		for j := range c.D {
			v := means[k*c.D+j]
			head.W[j*c.K+k] = v
			head.B[k] -= v * v / 2
		}
	}
	return sp, head
}

// WriteFeatures writes a case's problem (Split) as train, val and test
// .npz (x float32, y int64) and head.npz into dir; it returns the number
// of training samples.
func WriteFeatures(dir string, c ScaleCase, seed uint64) (int, error) {
	sp, head := Split(c, seed)
	for _, f := range []struct {
		name string
		set  *data.Set
	}{{"train.npz", &sp.Labeled}, {"val.npz", &sp.Val}, {"test.npz", &sp.Test}} {
		y := make([]int64, f.set.N)
		for i, v := range f.set.Y {
			y[i] = int64(v)
		}
		if err := npy.WriteNPZ(filepath.Join(dir, f.name), npy.Entry{Name: "x", Shape: []int{f.set.N, c.D}, Data: f.set.X},
			npy.Entry{Name: "y", Shape: []int{f.set.N}, Data: y}); err != nil {
			return 0, err
		}
	}
	err := npy.WriteNPZ(filepath.Join(dir, "head.npz"), npy.Entry{Name: "W", Shape: []int{c.D, c.K}, Data: head.W},
		npy.Entry{Name: "b", Shape: []int{c.K}, Data: head.B})
	return sp.Labeled.N, err
}

// RefreshSeconds times what a refresh computes on the features in dir —
// the validation forward pass, C and Z, the multipliers, D, G, P and every
// objective's value — and returns the median of reps.
func RefreshSeconds(dir string, reps int) (float64, error) {
	sp, head, err := data.LoadFeatures(data.FeatureFiles{
		Train: filepath.Join(dir, "train.npz"), Val: filepath.Join(dir, "val.npz"),
		Test: filepath.Join(dir, "test.npz"), Head: filepath.Join(dir, "head.npz"),
	})
	if err != nil {
		return 0, err
	}
	tr, err := headTrainer(sp, head)
	if err != nil {
		return 0, err
	}
	st := loop.Stats{Tail: tailOf(sp)}
	h := loop.DefaultHyper()
	var gc gain.Computer
	times := make([]float64, reps)
	for i := range times {
		t := time.Now()
		ev, err := tr.Evaluate(train.SplitVal, true)
		if err != nil {
			return 0, err
		}
		st.C, st.Z, st.W, st.B = ev.C, ev.Z, ev.W, ev.B
		if _, err := train.Decide(&gc, st, h); err != nil {
			return 0, err
		}
		times[i] = time.Since(t).Seconds()
	}
	slices.Sort(times)
	return times[reps/2], nil
}

func headTrainer(sp *data.Split, head *data.Head) (*local.Local, error) {
	net, err := model.New(model.Config{Arch: "identity", In: sp.Labeled.Dim, Classes: sp.K, Batch: 128, Seed: 1})
	if err != nil {
		return nil, err
	}
	if head != nil {
		if err := net.SetHead(head.W, head.B); err != nil {
			return nil, err
		}
	}
	return local.New(net, sp, 1)
}

func tailOf(sp *data.Split) []bool {
	c := make([]float64, sp.K)
	for k, n := range sp.TrainCounts {
		c[k] = float64(n)
	}
	return metric.TailSplit(c)
}

// HeadStepMS is the time of one SelMix step of a head on K-class,
// d-dimensional features with batch B, as the engine takes it (drawing
// pairs from P, gathering and mixing, the SGD step), in milliseconds: the
// median of 5 runs of n steps.
func HeadStepMS(K, d, B, n int) (float64, error) {
	sp, head := Split(ScaleCase{K: K, D: d, N1: 500, ValPer: 1, TestPer: 1}, 3)
	tr, err := headTrainer(sp, head)
	if err != nil {
		return 0, err
	}
	if err := tr.Net().SetBatch(B); err != nil {
		return 0, err
	}
	P := make([]float64, K*K)
	for i := range P {
		P[i] = 1 / float64(len(P))
	}
	r := &train.TrainRequest{Mode: train.ModeMixup, P: P, LR: []float64{1e-4}, Batch: B, BetaMin: 0.6, WeightDecay: 5e-4, Momentum: 0.9}
	times := make([]float64, 5)
	for i := range times {
		t := time.Now()
		for range n {
			if _, err := tr.Train(r); err != nil {
				return 0, err
			}
		}
		times[i] = time.Since(t).Seconds() * 1e3 / float64(n)
	}
	slices.Sort(times)
	return times[2], nil
}

// torchHeadStepMS runs bench/torch_head.py (the same step in PyTorch, one
// thread) and reads its milliseconds per step.
func torchHeadStepMS(ctx context.Context, python string) (float64, error) {
	_, file, _, _ := runtime.Caller(0)
	out, err := exec.CommandContext(ctx, python, filepath.Join(filepath.Dir(file), "torch_head.py")).Output()
	if err != nil {
		return 0, err
	}
	var ms float64
	if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "%f", &ms); err != nil {
		return 0, fmt.Errorf("bench/torch_head.py printed %q", out)
	}
	return ms, nil
}

package cli

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"selmix/cmd/selmix/internal/selmixtest"
	"selmix/core/loop"
	"selmix/core/npy"
	"selmix/runs"
	"selmix/runs/record"
)

// Feature files that cannot make a SelMix run are refused before the run
// exists: exit 2, one line naming the file and the class, and no run
// directory left behind.
func TestFeaturesRefusedBeforeRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	split := func(name string, ys ...int64) string {
		x := make([]float64, 4*len(ys))
		for i := range x {
			x[i] = float64(i%7) / 7
		}
		p := filepath.Join(dir, name)
		if err := npy.WriteNPZ(p,
			npy.Entry{Name: "x", Shape: []int{len(ys), 4}, Data: x},
			npy.Entry{Name: "y", Shape: []int{len(ys)}, Data: ys},
		); err != nil {
			t.Fatal(err)
		}
		return p
	}
	train := split("train.npz", 0, 1, 2, 0, 1, 0)
	val := split("val.npz", 0, 1, 2)
	cases := []struct {
		name string
		set  []string
		want []string
	}{
		{"class missing from test", []string{"data.test=" + split("test.npz", 0, 1, 1)},
			[]string{"test.npz", "class 2 has no test samples"}},
		{"class missing from train", []string{"data.train=" + split("train01.npz", 0, 1, 0), "data.test=" + split("test3.npz", 0, 1, 2)},
			[]string{"train01.npz", "class 2 has no labeled training samples"}},
		{"batch above labeled N", []string{"data.test=" + split("test4.npz", 0, 1, 2), "pretrain.batch=64"},
			[]string{"pretrain.batch", "64", "6 labeled samples"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runs := t.TempDir()
			args := []string{"run", "--headless", "-q", "--runs", runs,
				"--set", "data.source=features", "--set", "data.train=" + train, "--set", "data.val=" + val}
			for _, s := range c.set {
				args = append(args, "--set", s)
			}
			code, _, stderr := runCLI(args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2; stderr %q", code, stderr)
			}
			if n := strings.Count(strings.TrimSpace(stderr), "\n"); n != 0 {
				t.Errorf("stderr has %d lines, want one: %q", n+1, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not mention %q", stderr, w)
				}
			}
			if ents, _ := os.ReadDir(runs); len(ents) != 0 {
				t.Errorf("a refused run left %d entries in the run store", len(ents))
			}
		})
	}
}

// Runs that share pretrain.cache pre-train once and end exactly where a
// run that pre-trains on its own ends.
func TestPretrainCache(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	split := func(name string, n int) string {
		x, y := make([]float64, 8*n), make([]int64, n)
		for i := range y {
			y[i] = int64(i % 3)
			for j := range 8 {
				x[i*8+j] = rng.NormFloat64() + float64(y[i]*int64(j%3))
			}
		}
		p := filepath.Join(dir, name)
		if err := npy.WriteNPZ(p, npy.Entry{Name: "x", Shape: []int{n, 8}, Data: x}, npy.Entry{Name: "y", Shape: []int{n}, Data: y}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := []string{"run", "--headless", "--runs", filepath.Join(dir, "runs"),
		"--set", "data.source=features", "--set", "data.train=" + split("train.npz", 300),
		"--set", "data.val=" + split("val.npz", 60), "--set", "data.test=" + split("test.npz", 60),
		"--set", "pretrain.epochs=3", "--set", "pretrain.batch=32", "--set", "finetune.steps=40",
		"--set", "finetune.refresh=10", "--set", "record.plots=false"}
	cache := filepath.Join(dir, "cache")
	var finals []*loop.Summary
	for i, extra := range [][]string{nil, {"--set", "pretrain.cache=" + cache}, {"--set", "pretrain.cache=" + cache}} {
		args := append(append(slices.Clone(base), extra...), "--set", fmt.Sprintf("name=r%d", i))
		// The binary: pre-training and fine-tuning in this process,
		// under the race detector, took half a minute.
		stdout := selmixtest.Run(t, args...)
		fromCache := strings.Contains(stdout, "pre-trained model from the cache")
		if fromCache != (i == 2) || strings.Contains(stdout, "pre-training") == (i == 2) {
			t.Errorf("run %d: from the cache %v, want %v:\n%s", i, fromCache, i == 2, stdout)
		}
		r, err := runs.Open(filepath.Join(dir, "runs"), fmt.Sprintf("r%d", i))
		if err != nil {
			t.Fatal(err)
		}
		h, err := record.Load(r)
		if err != nil || h.Final == nil {
			t.Fatalf("run %d: %v, final %v", i, err, h)
		}
		finals = append(finals, h.Final)
	}
	ents, _ := filepath.Glob(filepath.Join(cache, "pretrained-*.npz"))
	if len(ents) != 1 {
		t.Errorf("cache holds %v, want one checkpoint", ents)
	}
	for i := 1; i < 3; i++ {
		if !reflect.DeepEqual(finals[i].TestAfter, finals[0].TestAfter) || !reflect.DeepEqual(finals[i].TestObjAfter, finals[0].TestObjAfter) {
			t.Errorf("run %d ends at %+v, the run without a cache at %+v", i, finals[i].TestAfter, finals[0].TestAfter)
		}
	}
}

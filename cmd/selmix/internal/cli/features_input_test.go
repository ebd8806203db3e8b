package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"selmix/core/npy"
)

// Feature files that cannot make a SelMix run are refused before the run
// exists: exit 2, one line naming the file and the class, and no run
// directory left behind.
func TestFeaturesRefusedBeforeRun(t *testing.T) {
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

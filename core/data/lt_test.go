package data

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// synthRaw builds a balanced raw dataset with perClass training and
// perTest test images per class. Row i of a set is (i, label), so every
// split row can be traced back to its source.
func synthRaw(K, perClass, perTest int) *Raw {
	mk := func(n int) Set {
		s := Set{X: make([]float32, 2*n), Y: make([]int, n), N: n, Dim: 2}
		for i := range n {
			s.Y[i] = i % K
			s.X[2*i], s.X[2*i+1] = float32(i), float32(i%K)
		}
		return s
	}
	names := make([]string, K)
	for k := range names {
		names[k] = "c" + string(rune('A'+k))
	}
	return &Raw{Train: mk(K * perClass), Test: mk(K * perTest), K: K, ClassNames: names}
}

func TestLTCounts(t *testing.T) {
	tests := []struct {
		name string
		n1   int
		rho  float64
		K    int
		want []int
	}{
		// N_k = 5000 · 100^(−k/9) = 5000, 2997.42, 1796.91, 1077.22, 645.78,
		// 387.13, 232.08, 139.13, 83.41, 50 — rounded to nearest.
		{"rho100", 5000, 100, 10, []int{5000, 2997, 1797, 1077, 646, 387, 232, 139, 83, 50}},
		// 30 · 0.01^(−k/9) = 30, 50.04, 83.48, 139.25, 232.28, 387.47,
		// 646.33, 1078.14, 1798.45, 3000 (the paper's inverted setting).
		{"inverted", 30, 0.01, 10, []int{30, 50, 83, 139, 232, 387, 646, 1078, 1798, 3000}},
		{"balanced", 7, 1, 4, []int{7, 7, 7, 7}},
		// 3 · 1000^(−k/2) = 3, 0.09, 0.003: the tail is clamped to 1.
		{"clamped to 1", 3, 1000, 3, []int{3, 1, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := LTCounts(tc.n1, tc.rho, tc.K); !slices.Equal(got, tc.want) {
				t.Errorf("LTCounts(%d, %v, %d) = %v, want %v", tc.n1, tc.rho, tc.K, got, tc.want)
			}
		})
	}
}

func TestBuildLTCountsAndDisjoint(t *testing.T) {
	raw := synthRaw(10, 5600, 300)
	cfg := SplitConfig{N1: 5000, RhoL: 100, ValPerClass: 500, TestPerClass: 100, Seed: 7}
	sp, err := BuildLT(raw, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []int{5000, 2997, 1797, 1077, 646, 387, 232, 139, 83, 50}
	if !slices.Equal(sp.TrainCounts, want) {
		t.Errorf("TrainCounts = %v, want %v", sp.TrainCounts, want)
	}
	if got := sp.Labeled.Counts(10); !slices.Equal(got, want) {
		t.Errorf("labeled counts = %v, want %v", got, want)
	}
	for k, c := range sp.Val.Counts(10) {
		if c != 500 {
			t.Errorf("val class %d: %d, want 500", k, c)
		}
	}
	for k, c := range sp.Test.Counts(10) {
		if c != 100 {
			t.Errorf("test class %d: %d, want 100", k, c)
		}
	}
	if sp.Unlabeled.N != 0 || sp.Unlabeled.Dim != 2 {
		t.Errorf("unlabeled N=%d Dim=%d, want 0 and 2 (M1=0)", sp.Unlabeled.N, sp.Unlabeled.Dim)
	}
	if sp.K != 10 || sp.ClassNames[3] != "cD" {
		t.Errorf("K=%d names=%v", sp.K, sp.ClassNames)
	}

	// Every row is a copy of the raw row its source index names.
	for _, c := range []struct {
		name string
		s    Set
		src  []int
		from *Set
	}{{"labeled", sp.Labeled, sp.labeledSrc, &raw.Train}, {"val", sp.Val, sp.valSrc, &raw.Train}, {"test", sp.Test, sp.testSrc, &raw.Test}} {
		if len(c.src) != c.s.N {
			t.Fatalf("%s: %d source indices for %d rows", c.name, len(c.src), c.s.N)
		}
		for i, j := range c.src {
			if !slices.Equal(c.s.Row(i), c.from.Row(j)) || c.s.Y[i] != c.from.Y[j] {
				t.Fatalf("%s row %d = %v (y=%d), want raw row %d = %v (y=%d)", c.name, i, c.s.Row(i), c.s.Y[i], j, c.from.Row(j), c.from.Y[j])
			}
		}
	}
	// No training image is used twice across labeled and validation.
	seen := map[int]string{}
	for _, c := range []struct {
		name string
		src  []int
	}{{"labeled", sp.labeledSrc}, {"val", sp.valSrc}} {
		for _, j := range c.src {
			if prev, dup := seen[j]; dup {
				t.Fatalf("training image %d is in both %s and %s", j, prev, c.name)
			}
			seen[j] = c.name
		}
	}
}

func TestBuildLTUnlabeledModes(t *testing.T) {
	raw := synthRaw(10, 6000, 10)
	tests := []struct {
		mode string
		m1   int
		rhoU float64
		want []int
	}{
		// 3000 · 100^(−k/9).
		{"", 3000, 0, []int{3000, 1798, 1078, 646, 387, 232, 139, 83, 50, 30}},
		{UnlabeledMatched, 3000, 0, []int{3000, 1798, 1078, 646, 387, 232, 139, 83, 50, 30}},
		{UnlabeledUniform, 300, 0, []int{300, 300, 300, 300, 300, 300, 300, 300, 300, 300}},
		// 30 · 100^(+k/9), the paper's inverted CIFAR-10 setting.
		{UnlabeledInverted, 30, 0, []int{30, 50, 83, 139, 232, 387, 646, 1078, 1798, 3000}},
		// 1000 · 10^(−k/9) = 1000, 774.26, 599.48, 464.16, 359.38, 278.26,
		// 215.44, 166.81, 129.16, 100.
		{UnlabeledGiven, 1000, 10, []int{1000, 774, 599, 464, 359, 278, 215, 167, 129, 100}},
	}
	for _, tc := range tests {
		t.Run("mode="+tc.mode, func(t *testing.T) {
			sp, err := BuildLT(raw, SplitConfig{N1: 1500, RhoL: 100, M1: tc.m1, UnlabeledMode: tc.mode, RhoU: tc.rhoU, ValPerClass: 100, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			if got := sp.Unlabeled.Counts(10); !slices.Equal(got, tc.want) {
				t.Errorf("unlabeled counts = %v, want %v", got, tc.want)
			}
			// Unlabeled rows keep their true labels and are disjoint from
			// labeled and validation rows.
			used := map[int]bool{}
			for _, j := range append(append(slices.Clone(sp.labeledSrc), sp.valSrc...), sp.unlabeledSrc...) {
				if used[j] {
					t.Fatalf("training image %d used twice", j)
				}
				used[j] = true
			}
			for i, j := range sp.unlabeledSrc {
				if sp.Unlabeled.Y[i] != raw.Train.Y[j] {
					t.Fatalf("unlabeled row %d has label %d, want the true label %d", i, sp.Unlabeled.Y[i], raw.Train.Y[j])
				}
			}
		})
	}
}

func TestBuildLTDeterminism(t *testing.T) {
	raw := synthRaw(5, 400, 40)
	cfg := SplitConfig{N1: 200, RhoL: 10, M1: 100, ValPerClass: 30, TestPerClass: 20, Seed: 11}
	a, err := BuildLT(raw, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := BuildLT(raw, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Error("same seed gave different splits")
	}
	cfg.Seed = 12
	c, err := BuildLT(raw, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range [][2][]int{{a.labeledSrc, c.labeledSrc}, {a.unlabeledSrc, c.unlabeledSrc}, {a.valSrc, c.valSrc}, {a.testSrc, c.testSrc}} {
		if slices.Equal(p[0], p[1]) {
			t.Error("seeds 11 and 12 drew the same indices")
		}
	}
	if !slices.Equal(a.TrainCounts, c.TrainCounts) {
		t.Errorf("counts depend on the seed: %v vs %v", a.TrainCounts, c.TrainCounts)
	}

	// Validation is drawn first, so it does not depend on ρ, N1 or M1.
	d, err := BuildLT(raw, SplitConfig{N1: 50, RhoL: 50, M1: 0, ValPerClass: 30, TestPerClass: 20, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.valSrc, d.valSrc) || !slices.Equal(a.testSrc, d.testSrc) {
		t.Error("validation or test changed with ρ, N1 or M1")
	}
	// TestPerClass 0 keeps the whole official test set, in order.
	e, err := BuildLT(raw, SplitConfig{N1: 50, RhoL: 50, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if e.Test.N != raw.Test.N || !slices.Equal(e.Test.X, raw.Test.X) || e.Val.N != 0 {
		t.Errorf("test N=%d val N=%d, want the full test set (%d) and no validation", e.Test.N, e.Val.N, raw.Test.N)
	}
}

func TestBuildLTErrors(t *testing.T) {
	raw := synthRaw(4, 100, 10)
	tests := []struct {
		name string
		raw  *Raw
		cfg  SplitConfig
		want string
	}{
		{"not enough images", raw, SplitConfig{N1: 80, RhoL: 1, M1: 20, ValPerClass: 10}, "class 0 (cA) has 100 training images but the split needs 110 (validation 10 + labeled 80 + unlabeled 20)"},
		{"not enough in tail", raw, SplitConfig{N1: 10, RhoL: 8, M1: 5, UnlabeledMode: UnlabeledInverted, ValPerClass: 60}, "class 3 (cD) has 100 training images but the split needs 101 (validation 60 + labeled 1 + unlabeled 40)"},
		{"not enough test", raw, SplitConfig{N1: 10, RhoL: 2, TestPerClass: 11}, "class 0 (cA) has 10 test images but TestPerClass = 11"},
		{"N1", raw, SplitConfig{N1: 0, RhoL: 2}, "N1 = 0"},
		{"rho below 1", raw, SplitConfig{N1: 5, RhoL: 0.5}, "RhoL = 0.5"},
		{"rho zero", raw, SplitConfig{N1: 5}, "RhoL = 0"},
		{"mode", raw, SplitConfig{N1: 5, RhoL: 2, M1: 3, UnlabeledMode: "reversed"}, `unknown UnlabeledMode "reversed"`},
		{"given without RhoU", raw, SplitConfig{N1: 5, RhoL: 2, M1: 3, UnlabeledMode: UnlabeledGiven}, "RhoU = 0"},
		{"negative", raw, SplitConfig{N1: 5, RhoL: 2, ValPerClass: -1}, "negative size"},
		{"nil", nil, SplitConfig{N1: 5, RhoL: 2}, "no dataset"},
		{"one class", &Raw{K: 1, ClassNames: []string{"a"}}, SplitConfig{N1: 5, RhoL: 2}, "K=1"},
		{"bad label", &Raw{K: 2, ClassNames: []string{"a", "b"}, Train: Set{X: []float32{0, 0}, Y: []int{0, 2}, N: 2, Dim: 1}}, SplitConfig{N1: 1, RhoL: 1}, "train set: label 2 at index 1 outside [0,2)"},
		{"bad shape", &Raw{K: 2, ClassNames: []string{"a", "b"}, Train: Set{X: []float32{0}, Y: []int{0, 1}, N: 2, Dim: 1}}, SplitConfig{N1: 1, RhoL: 1}, "len(X)=1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := BuildLT(tc.raw, tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

// SubsampleTest on a split of the whole test set gives the test set
// BuildLT draws with TestPerClass and the same seed, row for row: how the
// built-in experiment's first embedded split (200 test images per class)
// is rebuilt from the second (all of them).
func TestSubsampleTestMatchesBuildLT(t *testing.T) {
	raw := synthRaw(4, 300, 50)
	for _, seed := range []uint64{1, 9} {
		cfg := SplitConfig{N1: 200, RhoL: 10, ValPerClass: 20, TestPerClass: 17, Seed: seed}
		want, err := BuildLT(raw, cfg)
		if err != nil {
			t.Fatal(err)
		}
		cfg.TestPerClass = 0
		got, err := BuildLT(raw, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got.Test.N != 200 {
			t.Fatalf("whole test set: %d rows, want 200", got.Test.N)
		}
		if err := SubsampleTest(got, 17, seed); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Test.Y, want.Test.Y) || !slices.Equal(got.Test.X, want.Test.X) || got.Test.N != 68 {
			t.Errorf("seed %d: subsampled test set (%d rows) differs from BuildLT's (%d rows)", seed, got.Test.N, want.Test.N)
		}
	}
	sp, err := BuildLT(raw, SplitConfig{N1: 200, RhoL: 10, ValPerClass: 20, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := SubsampleTest(sp, 51, 1); err == nil || !strings.Contains(err.Error(), "has 50 test images but TestPerClass = 51") {
		t.Errorf("51 of 50: %v", err)
	}
}

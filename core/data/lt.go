package data

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Unlabeled-set modes for SplitConfig.UnlabeledMode.
const (
	UnlabeledMatched  = "matched"  // ρ_u = ρ_l
	UnlabeledUniform  = "uniform"  // ρ_u = 1
	UnlabeledInverted = "inverted" // ρ_u = 1/ρ_l
	UnlabeledGiven    = "given"    // ρ_u = SplitConfig.RhoU
)

// SplitConfig describes a long-tailed split (docs/method.md, Long-tailed splits).
type SplitConfig struct {
	// N1 is the labeled count of class 0, the most frequent; must be ≥ 1.
	N1 int
	// RhoL = N_1/N_K is the labeled imbalance factor; must be ≥ 1.
	RhoL float64
	// M1 is the unlabeled count of class 0; 0 means no unlabeled set.
	M1 int
	// UnlabeledMode picks ρ_u: "matched" (the default when empty),
	// "uniform", "inverted" or "given" (use RhoU).
	UnlabeledMode string
	// RhoU is the unlabeled imbalance factor in "given" mode; must be > 0.
	RhoU float64
	// ValPerClass validation images per class (balanced); 0 means none.
	ValPerClass int
	// TestPerClass subsamples the official test set to this many images
	// per class; 0 keeps the whole test set.
	TestPerClass int
	// Seed makes the split reproducible.
	Seed uint64
}

// Split is a prepared dataset ready for fine-tuning.
type Split struct {
	// Unlabeled keeps its TRUE labels in Y (for --oracle-labels and for
	// measuring pseudo-label accuracy); -1 marks an unknown label.
	Labeled, Unlabeled, Val, Test Set
	K                             int
	ClassNames                    []string
	TrainCounts                   []int // labeled counts per class

	// Source indices of each set's rows into Raw.Train (labeled,
	// unlabeled, val) and Raw.Test (test); set by BuildLT only.
	labeledSrc, unlabeledSrc, valSrc, testSrc []int
}

// LTCounts returns N_k = round(n1 · ρ^{−k/(K−1)}) for k = 0…K−1, each at
// least 1 (when n1 ≥ 1). With K = 1 it returns [n1].
func LTCounts(n1 int, rho float64, K int) []int {
	c := make([]int, K)
	for k := range c {
		v := float64(n1)
		if K > 1 {
			v *= math.Pow(rho, -float64(k)/float64(K-1))
		}
		c[k] = int(math.Round(v))
		if c[k] < 1 && n1 >= 1 {
			c[k] = 1
		}
	}
	return c
}

// rhoU resolves the unlabeled imbalance factor of cfg.
func (cfg SplitConfig) rhoU() (float64, error) {
	switch cfg.UnlabeledMode {
	case "", UnlabeledMatched:
		return cfg.RhoL, nil
	case UnlabeledUniform:
		return 1, nil
	case UnlabeledInverted:
		return 1 / cfg.RhoL, nil
	case UnlabeledGiven:
		if !(cfg.RhoU > 0) || math.IsInf(cfg.RhoU, 0) {
			return 0, fmt.Errorf("split: RhoU = %v in %q mode, want a finite value > 0", cfg.RhoU, UnlabeledGiven)
		}
		return cfg.RhoU, nil
	}
	return 0, fmt.Errorf("split: unknown UnlabeledMode %q (want %q, %q, %q or %q)",
		cfg.UnlabeledMode, UnlabeledMatched, UnlabeledUniform, UnlabeledInverted, UnlabeledGiven)
}

// Streams of the seeded generator: one per class for the training pool and
// one per class for the test pool, so no draw depends on another class or
// on the split's sizes.
const (
	streamTrain = 0x5e1_0000
	streamTest  = 0x5e1_8000
)

// BuildLT carves a long-tailed split out of raw (docs/method.md, Long-tailed splits). Class k keeps
// N_k = round(N1 · ρ_l^{−k/(K−1)}) labeled images (at least 1) and, when
// M1 > 0, M_k = round(M1 · ρ_u^{−k/(K−1)}) unlabeled ones; class 0 is the
// most frequent (the raw class order is the frequency order).
//
// Each class's training images are shuffled by a generator seeded from
// (Seed, k) alone. Validation takes the first ValPerClass of that order, so
// it never depends on ρ, N1 or M1; labeled takes the next N_k and unlabeled
// the M_k after that, so the three are disjoint. Test is the official test
// set, optionally subsampled to TestPerClass per class. Every set lists its
// rows in their raw order.
func BuildLT(raw *Raw, cfg SplitConfig) (*Split, error) {
	if raw == nil {
		return nil, fmt.Errorf("split: no dataset")
	}
	K := raw.K
	if K < 2 {
		return nil, fmt.Errorf("split: dataset has K=%d classes, want at least 2", K)
	}
	if len(raw.ClassNames) != K {
		return nil, fmt.Errorf("split: %d class names for K=%d classes", len(raw.ClassNames), K)
	}
	for _, c := range []struct {
		name string
		s    *Set
	}{{"train", &raw.Train}, {"test", &raw.Test}} {
		name, s := c.name, c.s
		if err := s.shapeErr(); err != nil {
			return nil, fmt.Errorf("split: %s set: %v", name, err)
		}
		if err := s.checkLabels(K, 0); err != nil {
			return nil, fmt.Errorf("split: %s set: %v", name, err)
		}
	}
	if cfg.N1 < 1 {
		return nil, fmt.Errorf("split: N1 = %d, want ≥ 1", cfg.N1)
	}
	if !(cfg.RhoL >= 1) || math.IsInf(cfg.RhoL, 0) {
		return nil, fmt.Errorf("split: RhoL = %v, want a finite value ≥ 1", cfg.RhoL)
	}
	if cfg.M1 < 0 || cfg.ValPerClass < 0 || cfg.TestPerClass < 0 {
		return nil, fmt.Errorf("split: negative size (M1=%d ValPerClass=%d TestPerClass=%d)", cfg.M1, cfg.ValPerClass, cfg.TestPerClass)
	}
	rhoU, err := cfg.rhoU()
	if err != nil {
		return nil, err
	}
	nLab := LTCounts(cfg.N1, cfg.RhoL, K)
	nUnl := make([]int, K)
	if cfg.M1 > 0 {
		nUnl = LTCounts(cfg.M1, rhoU, K)
	}

	sp := &Split{K: K, ClassNames: append([]string(nil), raw.ClassNames...), TrainCounts: nLab}
	pools := raw.Train.ClassIndex(K)
	for k, pool := range pools {
		need := cfg.ValPerClass + nLab[k] + nUnl[k]
		if need > len(pool) {
			return nil, fmt.Errorf("split: class %d (%s) has %d training images but the split needs %d (validation %d + labeled %d + unlabeled %d)",
				k, raw.ClassNames[k], len(pool), need, cfg.ValPerClass, nLab[k], nUnl[k])
		}
		rng := rand.New(rand.NewPCG(cfg.Seed, streamTrain+uint64(k)))
		perm := rng.Perm(len(pool))
		take := func(dst *[]int, from, n int) {
			for _, p := range perm[from : from+n] {
				*dst = append(*dst, pool[p])
			}
		}
		take(&sp.valSrc, 0, cfg.ValPerClass)
		take(&sp.labeledSrc, cfg.ValPerClass, nLab[k])
		take(&sp.unlabeledSrc, cfg.ValPerClass+nLab[k], nUnl[k])
	}

	if sp.testSrc, err = testRows(&raw.Test, raw.ClassNames, K, cfg.TestPerClass, cfg.Seed); err != nil {
		return nil, err
	}

	for _, src := range [][]int{sp.labeledSrc, sp.unlabeledSrc, sp.valSrc, sp.testSrc} {
		slices.Sort(src)
	}
	sp.Labeled = raw.Train.subset(sp.labeledSrc)
	sp.Unlabeled = raw.Train.subset(sp.unlabeledSrc)
	sp.Val = raw.Train.subset(sp.valSrc)
	sp.Test = raw.Test.subset(sp.testSrc)
	return sp, nil
}

// testRows are the rows of test a split keeps: all of them (perClass 0),
// or perClass of each class, drawn with the split's seed.
func testRows(test *Set, names []string, K, perClass int, seed uint64) ([]int, error) {
	if perClass == 0 {
		rows := make([]int, test.N)
		for i := range rows {
			rows[i] = i
		}
		return rows, nil
	}
	var rows []int
	for k, pool := range test.ClassIndex(K) {
		if perClass > len(pool) {
			name := fmt.Sprint(k)
			if k < len(names) {
				name = names[k]
			}
			return nil, fmt.Errorf("split: class %d (%s) has %d test images but TestPerClass = %d", k, name, len(pool), perClass)
		}
		rng := rand.New(rand.NewPCG(seed, streamTest+uint64(k)))
		for _, p := range rng.Perm(len(pool))[:perClass] {
			rows = append(rows, pool[p])
		}
	}
	slices.Sort(rows)
	return rows, nil
}

// SubsampleTest keeps perClass test images of each class of sp, drawn as
// BuildLT draws them with seed: applied to a split of the whole official
// test set, it gives the test set BuildLT gives with TestPerClass =
// perClass and that seed. perClass 0 keeps them all.
func SubsampleTest(sp *Split, perClass int, seed uint64) error {
	rows, err := testRows(&sp.Test, sp.ClassNames, sp.K, perClass, seed)
	if err != nil {
		return err
	}
	if perClass > 0 {
		sp.Test = sp.Test.subset(rows)
	}
	return nil
}

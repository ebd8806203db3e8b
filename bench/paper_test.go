package bench

import (
	"slices"
	"strings"
	"testing"

	"selmix/core/experiment"
	"selmix/core/loop"
	"selmix/core/search"
	"selmix/runs/sweep"
)

// Every row of the shipped spec lands in the table it was written for.
func TestPaperRowsClassify(t *testing.T) {
	spec, _, err := PaperSpec(PaperOptions{Semi: true})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	var lbls []string
	for _, r := range spec.Rows {
		v := rowValues(r)
		tb := rowTable(v)
		count[tb]++
		lbls = append(lbls, tb+":"+rowLabel(tb, v))
	}
	want := map[string]int{"objectives": 6, "policies": 10, "resample": 6, "margin": 4, "scratch": 2, "form": 1, "adapt": 18, "semi": 2}
	for k, n := range want {
		if count[k] != n {
			t.Errorf("%d rows in table %s, want %d (labels %v)", count[k], k, n, lbls)
		}
	}
	for _, l := range []string{"objectives:hmean@cov", "policies:min-recall/greedy", "policies:mean-recall@cov/mislas2", "scratch:min-recall/csst", "form:min-recall/official",
		"adapt:gmean/refresh 10", "adapt:min-recall/adapt lr", "resample:gmean/resample", "margin:hmean@cov/cov_margin auto", "margin:mean-recall@cov/cov_margin auto, refresh 10, adapt lr, s 1", "semi:min-recall/oracle=true", "semi:min-recall/oracle=false"} {
		if !slices.Contains(lbls, l) {
			t.Errorf("no row %q among %v", l, lbls)
		}
	}
}

// The options change the spec's base, its seed axis and its rows, and the
// recorded text says so.
func TestPaperSpecOptions(t *testing.T) {
	spec, text, err := PaperSpec(PaperOptions{Seeds: 2, Steps: 60, Epochs: 1, Cache: "/c", Sets: []string{"finetune.lr=0.001"}})
	if err != nil {
		t.Fatal(err)
	}
	base := map[string]string{}
	for _, s := range spec.Base {
		base[s.Key] = s.Value
	}
	// The paper's fixed step is pinned: the built-in default adapts it.
	for k, v := range map[string]string{"finetune.steps": "60", "pretrain.epochs": "1", "pretrain.cache": `"/c"`, "finetune.lr": "0.001", "data.rho": "100",
		"finetune.adapt": `"none"`, "finetune.refresh": "50"} {
		if base[k] != v {
			t.Errorf("base %s = %q, want %q", k, base[k], v)
		}
	}
	i := slices.IndexFunc(spec.Axes, func(a search.Axis) bool { return a.Key == sweep.SeedKey })
	if i < 0 || !slices.Equal(spec.Axes[i].Values, []string{"1", "2"}) {
		t.Errorf("axes %v, want seed = [1, 2]", spec.Axes)
	}
	if spec.Count() != 47*2 {
		t.Errorf("%d members, want 47 rows (no semi) × 2 seeds", spec.Count())
	}
	if !strings.HasPrefix(string(text), "# selmix bench paper changed this spec: finetune.steps=60, pretrain.epochs=1, pretrain.cache=\"/c\", finetune.lr=0.001, seed=1..2, no semi-supervised rows\n") {
		t.Errorf("recorded text starts %q", strings.SplitN(string(text), "\n", 2)[0])
	}
	if _, err := spec.Members("paper-0000"); err != nil {
		t.Errorf("members: %v", err)
	}
	if _, _, err := PaperSpec(PaperOptions{Sets: []string{"finetune.lr"}}); err == nil {
		t.Error("a --set without = was accepted")
	}
}

// The suite's base is the paper's fine-tuning: every setting in which the
// built-in experiment departs from the paper (adapt, cov_margin, refresh,
// s) is set back, so a change of the built-in defaults leaves the suite's
// numbers alone.
func TestPaperBaseIsThePapers(t *testing.T) {
	spec, _, err := PaperSpec(PaperOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var sets []string
	for _, s := range spec.Base {
		if strings.HasPrefix(s.Key, "finetune.") {
			sets = append(sets, s.Arg())
		}
	}
	c, err := experiment.Load("", sets)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Finetune.Hyper, loop.DefaultHyper(); got != want {
		t.Errorf("suite base hyperparameters\n got %+v\nwant the paper's %+v", got, want)
	}
}

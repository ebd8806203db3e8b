package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"selmix/cmd/selmix/internal/selmixtest"
)

// The smoke version of the paper suite (what CI runs): one seed, a few
// steps; it checks that every row runs as a sweep member and the report
// is complete, not what the numbers are.
func TestBenchPaperSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite")
	}
	t.Parallel()
	const data = "/usr/share/datasets/fashion-mnist"
	if _, err := os.Stat(filepath.Join(data, "train-images-idx3-ubyte.gz")); err != nil {
		t.Skipf("Debian's dataset-fashion-mnist is not installed (.ci/run installs it): %v", err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "results.md")
	root := filepath.Join(dir, "runs")
	// No figures per member (record.plots): the report draws its own. No
	// plug-in fits (record.plugin, a second a run): bench's table tests
	// and core/plugin's cover them.
	log := selmixtest.Run(t, "bench", "paper", "--smoke", "--set", "record.plots=false", "--set", "record.plugin=false", "--runs", root, "--out", out)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	md := string(b)
	for _, want := range []string{
		"| pre-trained (la-ce) |", "| hmean@cov |", "| mean-recall@cov |", "| min-recall/official", "oracle labels",
		"| objective | selmix | uniform | greedy | none | csst | mislas2 |", "| min-recall/csst |", "| objective | refresh 50 (paper) | refresh 10 | adapt refresh | adapt lr |",
		"Do the paper's claims hold here?", "SelMix improves the optimized objective", "figures/policies-min-recall/compare-final.png",
		"finetune.objective=\"hmean\"", "## What does the mixup add? SelMix against resample", "| hmean@cov/resample |",
		"## Coverage constraints on test", "| mean-recall@cov/cov_margin auto |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("results lack %q", want)
		}
	}
	if strings.Contains(md, "Not finished") {
		t.Errorf("members left out:\n%s", md)
	}
	// The runs' settings name paths relative to the folder the suite ran
	// in or to the runs root (the first line quotes the command as typed).
	if runsTable := md[strings.Index(md, "\n## Runs"):]; strings.Contains(runsTable, dir) || !strings.Contains(runsTable, `pretrain.cache="<runs root>/.pretrained"`) {
		i := max(0, strings.Index(runsTable, dir)-200)
		t.Errorf("the runs' settings name %s, or not the cache relative to the runs root: %s", dir, runsTable[i:min(len(runsTable), i+400)])
	}
	// One pre-training per setting (supervised, semi-supervised, CSST from
	// scratch for each of its two objectives), shared by every member of
	// the seed.
	if cks, _ := filepath.Glob(filepath.Join(root, ".pretrained", "pretrained-*.npz")); len(cks) != 4 {
		t.Errorf("pre-trained checkpoints %v, want 4", cks)
	}
	if _, err := os.Stat(filepath.Join(dir, "figures", "policies-min-recall", "compare-final.png")); err != nil {
		t.Error(err)
	}
	// The report again, from the finished sweep, as after a Slurm run.
	out2 := filepath.Join(dir, "again", "results.md")
	selmixtest.Run(t, "bench", "paper", "--runs", root, "--report", "paper", "--out", out2)
	b2, err := os.ReadFile(out2)
	if err != nil {
		t.Fatal(err)
	}
	table := func(s string) string {
		i := strings.Index(s, "## Optimized on")
		return s[i : i+strings.Index(s[i:], "\n\n## ")]
	}
	if table(string(b2)) != table(md) {
		t.Errorf("the report of the finished sweep differs:\n%s\nvs\n%s", table(string(b2)), table(md))
	}
}

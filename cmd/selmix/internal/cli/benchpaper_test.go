package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"selmix/core/train"
)

// The smoke version of the paper suite (what CI runs): one seed, a few
// steps; it checks that every row runs and the report is complete, not
// what the numbers are.
func TestBenchPaperSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite")
	}
	const data = "/usr/share/datasets/fashion-mnist"
	if _, err := os.Stat(filepath.Join(data, "train-images-idx3-ubyte.gz")); err != nil {
		t.Skipf("Debian's dataset-fashion-mnist is not installed (.ci/run installs it): %v", err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "results.md")
	log := runSelmix(t, "bench", "paper", "--smoke", "--runs", filepath.Join(dir, "runs"), "--out", out)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	md := string(b)
	for _, want := range []string{
		"| pre-trained (LA-CE) |", "| hmean@cov |", "| mean-recall@cov |", "| min-recall/official", "oracle labels",
		"| objective | selmix | uniform | greedy | none | csst | mislas2 |", "| min-recall/csst |", "| mean-recall@cov/mislas2 |",
		"| objective | CSST from scratch |", "| mean-recall@cov/csst-scratch |",
		"Do the paper's claims hold here?", "SelMix improves the optimized objective", "policies-min-recall/compare-final.png",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("results lack %q", want)
		}
	}
	// The scratch rows report the pre-trained model's test metrics (the
	// run's "test before"): numbers, not the NaN of an empty column.
	if strings.Contains(md, "| min-recall | NaN |") || strings.Contains(md, "| mean-recall@cov | NaN |") {
		t.Error("the CSST from scratch table has no value")
	}
	if !strings.Contains(md, "name=bench-min-recall-seed1") {
		t.Error("the runs table does not give each row's configuration")
	}
	if got := strings.Count(log, "seed 1  "); got != len(paperRows(true)) {
		t.Errorf("%d rows ran, want %d:\n%s", got, len(paperRows(true)), log)
	}
}

func TestMeanStd(t *testing.T) {
	m, s := meanStd([]float64{1, 2, 3, 4})
	// Hand-worked: mean 2.5, sample variance (2.25+0.25+0.25+2.25)/3 = 5/3.
	if m != 2.5 || s*s-5.0/3 > 1e-12 || 5.0/3-s*s > 1e-12 {
		t.Errorf("meanStd = %v, %v; want 2.5, sqrt(5/3)", m, s)
	}
	if _, s := meanStd([]float64{7}); s != 0 {
		t.Errorf("one value: std %v, want 0", s)
	}
	sum := &train.Summary{Objective: "min-recall", TestObjAfter: make([]float64, 9)}
	sum.TestObjAfter[1] = 0.42
	if v := objCol("min-recall").get(sum, true); v != 0.42 {
		t.Errorf("objCol(min-recall) = %v, want 0.42 (index 1 of metric.Objectives())", v)
	}
}

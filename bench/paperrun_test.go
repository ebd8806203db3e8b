package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"selmix/runs/sweep"
)

// PlanPaper plans the suite with the options applied, in the runs root
// given; the smoke options are one seed of 60 steps after one epoch.
func TestPlanPaper(t *testing.T) {
	root := t.TempDir()
	o := PaperOptions{Seeds: 5}
	o.Smoke()
	if o.Seeds != 1 || o.Steps != 60 || o.Epochs != 1 {
		t.Fatalf("Smoke: %+v", o)
	}
	s, spec, text, err := PlanPaper(root, root, o)
	if err != nil {
		t.Fatal(err)
	}
	if s.Root != root || s.Workdir != root || len(s.Members) != spec.Count() || len(s.Members) == 0 || !strings.Contains(string(text), "seed=1..1") {
		t.Errorf("plan: root %s workdir %s, %d members for a spec of %d, text %.200q", s.Root, s.Workdir, len(s.Members), spec.Count(), text)
	}
	for _, m := range s.Members {
		if !strings.Contains(strings.Join(m.Sets, " "), "finetune.steps=60") {
			t.Fatalf("member %v does not run 60 steps", m.Sets)
		}
	}
	if _, _, _, err := PlanPaper(root, root, PaperOptions{Sets: []string{"nokey"}}); err == nil {
		t.Error("PlanPaper took a --set without =")
	}
}

// WritePaperReport of a sweep with nothing finished is an error, and
// writes nothing.
func TestWritePaperReportNothingFinished(t *testing.T) {
	root := t.TempDir()
	o := PaperOptions{}
	o.Smoke()
	s, spec, text, err := PlanPaper(root, root, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Create(spec, text); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "docs", "results.md")
	figErr, err := WritePaperReport([]*sweep.Sweep{s}, "selmix bench paper --smoke", out)
	if err == nil || figErr != nil || !strings.Contains(err.Error(), "no member has finished") {
		t.Errorf("WritePaperReport: %v, %v; want an error saying no member has finished", figErr, err)
	}
	if _, err := os.Stat(filepath.Dir(out)); !os.IsNotExist(err) {
		t.Errorf("the report's folder: %v, want none", err)
	}
}

// The report says which BLAS kernels its members ran on, counted, since
// its digits hold for those only (issue 43).
func TestArithmeticLine(t *testing.T) {
	got := arithmetic([]paperResult{{arith: "openblas Haswell"}, {arith: "openblas Haswell"}, {arith: "openblas Cooperlake"}, {}})
	for _, want := range []string{"BLAS not recorded (1), openblas Cooperlake (1), openblas Haswell (2): ", "differ within about the seeds' spread"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
}

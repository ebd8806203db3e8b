package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"selmix/cmd/selmix/internal/selmixtest"
	"selmix/viz"
)

// vizRuns is the runs root of the small runs viz's golden tests draw.
var vizRuns = filepath.Join("..", "..", "..", "..", "viz", "testdata", "run")

func TestExportCommand(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	code, stdout, stderr := runCLI("export", "--runs", vizRuns, "viz-selmix", "--out", out, "--dpi", "30")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, name := range viz.FigureNames() {
		for _, ext := range []string{".png", ".csv"} {
			if _, err := os.Stat(filepath.Join(out, name+ext)); err != nil {
				t.Errorf("missing %s%s: %v", name, ext, err)
			}
		}
		if !strings.Contains(stdout, name+".png") {
			t.Errorf("output does not list %s.png:\n%s", name, stdout)
		}
	}
	if !strings.Contains(stdout, "(7x5 in, 210x150 px)") {
		t.Errorf("output does not give the metrics figure's size:\n%s", stdout)
	}
}

func TestExportCommandFormatsAndDirs(t *testing.T) {
	t.Parallel()
	ents, err := os.ReadDir(vizRuns)
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range viz.Formats {
		t.Run(format, func(t *testing.T) {
			out := t.TempDir()
			// A run directory works as RUN too.
			dir := filepath.Join(vizRuns, ents[0].Name())
			// The binary: drawing in this process, under the race
			// detector, took seconds a figure.
			selmixtest.Run(t, "export", dir, "--format", format, "--out", out, "--size", "4x3in", "--dpi", "30")
			if _, err := os.Stat(filepath.Join(out, "metrics."+format)); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestExportCompare(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	// min-recall, the worst recall's old name, still finds it; the files
	// are named for what they hold, by its one name (min_recall).
	code, stdout, stderr := runCLI("export", "--compare", "--runs", vizRuns, "viz-selmix", "viz-uniform", "--metric", "min-recall", "--out", out, "--dpi", "30")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, name := range []string{"compare-min_recall.png", "compare-min_recall.csv", "compare-final.png", "compare-final.csv"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("missing %s (output %s)", name, stdout)
		}
	}
}

// --group-by adds the grouped figures (curves, and the final metrics as
// bars per group): one group per policy here, each of one run, named by
// the whole key though a short one was given.
func TestExportCompareGroupBy(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	code, stdout, stderr := runCLI("export", "--compare", "--runs", vizRuns, "viz-selmix", "viz-uniform", "--group-by", "policy", "--out", out, "--dpi", "30")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, "compare-psi_min-recall-by-finetune.policy.csv"))
	if err != nil {
		t.Fatalf("%v (output %s)", err, stdout)
	}
	csv := string(b)
	for _, want := range []string{"group,step,std,n,mean,note\n", "\nselmix,0,0,1,", "\nuniform,0,0,1,", "\npre-trained,0,,,"} {
		if !strings.Contains(csv, want) {
			t.Errorf("grouped CSV lacks %q:\n%.300s", want, csv)
		}
	}
	for _, name := range []string{"compare-psi_min-recall-by-finetune.policy.png", "compare-final.png", "compare-final-by-finetune.policy.png"} {
		if !strings.Contains(stdout, name) {
			t.Errorf("output does not list %s:\n%s", name, stdout)
		}
	}
}

func TestExportBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no run", []string{"export"}, "give a run"},
		{"unknown run", []string{"export", "--runs", vizRuns, "no-such-run"}, `no run "no-such-run"`},
		{"bad format", []string{"export", "--runs", vizRuns, "viz-selmix", "--format", "jpeg"}, `--format "jpeg"`},
		{"bad size", []string{"export", "--runs", vizRuns, "viz-selmix", "--size", "big"}, "--size"},
		{"bad dpi", []string{"export", "--runs", vizRuns, "viz-selmix", "--dpi", "0"}, "dpi"},
		{"two runs", []string{"export", "--runs", vizRuns, "viz-selmix", "viz-uniform"}, "use --compare"},
		{"metric alone", []string{"export", "--runs", vizRuns, "viz-selmix", "--metric", "gmean"}, "--metric goes with --compare"},
		{"bad metric", []string{"export", "--compare", "--runs", vizRuns, "viz-selmix", "--metric", "recall"}, `unknown metric "recall"`},
		{"unknown flag", []string{"export", "--colour", "red"}, "unknown flag"},
		{"group-by alone", []string{"export", "--runs", vizRuns, "viz-selmix", "--group-by", "policy"}, "--group-by goes with --compare"},
		{"group-by unknown key", []string{"export", "--compare", "--runs", vizRuns, "viz-selmix", "viz-uniform", "--group-by", "colour"}, `--group-by "colour": no run's config has that key`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(append(tc.args, "--out", t.TempDir())...)
			if code != 2 {
				t.Errorf("exit %d, want 2 (stderr %q)", code, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q lacks %q", stderr, tc.want)
			}
		})
	}
}

package cli

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"selmix/bench"
	"selmix/cmd/selmix/internal/selmixtest"
	"selmix/runs"
	"selmix/runs/record"
)

// bench worker on the features recipe (no torchvision needed): both sides
// run, the table has both rows, and the selmix run made the evaluation
// passes the plain loop was told to make.
func TestBenchWorkerFeatures(t *testing.T) {
	t.Parallel()
	needTorch(t)
	dir := features(t, 4, 8, 0.8, 1)
	work := t.TempDir()
	args := append([]string{"bench", "worker", "--steps", "30", "--refresh", "10", "--batch", "16", "--loader-workers", "0", "--dir", work, "--"},
		workerCmd(t, featureArgs(dir)...)[2:]...)
	out := selmixtest.Run(t, args...)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^30 steps of batch 16 \(2×16 images through the backbone\), refresh 10: 4 validation and 2 test passes; device cpu$`),
		regexp.MustCompile(`(?m)^\| plain PyTorch \| DataLoader\(num_workers=0\) \| [0-9.]+ s \| [0-9.]+ s \([0-9]+ %\) \| [0-9.]+ \| [0-9]+ \| – \| – \| [0-9.]+ s \|$`),
		regexp.MustCompile(`(?m)^\| selmix \+ worker \| worker, (in process|--loader-workers 0) \| [0-9.]+ s \| [0-9.]+ s \([0-9]+ %\) \| [0-9.]+ \| [0-9]+ \| – \| – \| [0-9.]+ s \|$`),
		regexp.MustCompile(`(?m)^selmix / plain: wall [0-9.]+×, steps/s [0-9.]+×, images/s [0-9.]+×$`),
	} {
		if !want.MatchString(out) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
	rs, err := runs.List(filepath.Join(work, "runs-0"))
	if err != nil || len(rs) != 1 {
		t.Fatalf("runs: %v %v", rs, err)
	}
	h, err := record.Load(&rs[0])
	if err != nil {
		t.Fatal(err)
	}
	val, _ := bench.EvalPasses(30, 10)
	if h.Final == nil || h.Final.Steps != 30 || len(h.Refreshes) != val {
		t.Errorf("selmix run: %d refreshes (want %d, the plain loop's validation passes), final %+v", len(h.Refreshes), val, h.Final)
	}
}

func TestBenchWorkerBadInput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--", "python3", "train.py"}, "must be PYTHON …/selmix_worker.py"},
		{[]string{"python3"}, "must be PYTHON …/selmix_worker.py"},
		{[]string{"--steps", "0", "--", "python3", "selmix_worker.py"}, "want --steps, --batch, --refresh, --repeat ≥ 1"},
		{[]string{"--", "python3", "/nonexistent/selmix_worker.py"}, "/nonexistent/selmix_worker.py: no such file or directory"},
	}
	for _, c := range cases {
		out, code := selmixtest.Code(t, nil, append([]string{"bench", "worker"}, c.args...)...)
		if code != 2 || !strings.Contains(out, c.want) || strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Errorf("bench worker %q: exit %d, output %q; want exit 2 and one line with %q", c.args, code, out, c.want)
		}
	}
}

package cli

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
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

// imageTree writes an ImageFolder tree of K classes of 16 px PNGs (train:
// 3 images for the first fifth of the classes, 1 for the rest; val and
// test: 1 each) and returns its folder.
func imageTree(t *testing.T, K int) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "tree")
	script := `
import os, sys, numpy as np
from PIL import Image
root, K = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(0)
for split, per in (("train", lambda k: 3 if k < K // 5 else 1), ("val", lambda k: 1), ("test", lambda k: 1)):
    for k in range(K):
        d = os.path.join(root, split, f"c{k:04d}")
        os.makedirs(d, exist_ok=True)
        base = np.array([(k * 37) % 256, (k * 101) % 256, (k * 211) % 256])
        for i in range(per(k)):
            x = np.clip(base[None, None, :] + rng.normal(0, 20, (16, 16, 3)), 0, 255).astype(np.uint8)
            Image.fromarray(x).save(os.path.join(d, f"{i}.png"))
`
	if out, err := exec.Command(python, "-c", script, root, strconv.Itoa(K)).CombinedOutput(); err != nil {
		t.Fatalf("writing the image tree: %v\n%s", err, out)
	}
	return root
}

// ImageNet-LT's scale in miniature: K = 1000 classes of images through the
// imagefolder recipe (a torchvision net), end to end under selmix and the
// plain loop, with the share of the time spent evaluating on both sides.
func TestBenchWorkerImagesK1000(t *testing.T) {
	t.Parallel()
	needTorch(t)
	if exec.Command(python, "-c", "import torchvision, PIL").Run() != nil {
		t.Skip("no torchvision or PIL (apt install python3-torchvision)")
	}
	tree := imageTree(t, 1000)
	work := t.TempDir()
	args := append([]string{"bench", "worker", "--steps", "20", "--refresh", "10", "--batch", "32", "--loader-workers", "0", "--dir", work, "--"},
		workerCmd(t, "--recipe", "imagefolder", "--root", tree, "--net", "shufflenet_v2_x0_5", "--image-size", "32",
			"--pretrain-epochs", "1", "--eval-batch", "256")[2:]...)
	out := selmixtest.Run(t, args...)
	share := regexp.MustCompile(`(?m)^\| (plain PyTorch|selmix \+ worker) \| [^|]+ \| ([0-9.]+) s \| ([0-9.]+) s \(([0-9]+) %\) \|`)
	rows := share.FindAllStringSubmatch(out, -1)
	if len(rows) != 2 {
		t.Fatalf("want both sides' evaluation share:\n%s", out)
	}
	for _, r := range rows {
		wall, _ := strconv.ParseFloat(r[2], 64)
		eval, _ := strconv.ParseFloat(r[3], 64)
		if !(eval > 0 && eval < wall) {
			t.Errorf("%s: evaluation %v s of a fine-tuning of %v s", r[1], eval, wall)
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
	if h.Final == nil || h.Final.Steps != 20 || len(h.Refreshes) != 3 {
		t.Fatalf("selmix run: %d refreshes, final %+v; want 3 and 20 steps", len(h.Refreshes), h.Final)
	}
	last := h.Refreshes[len(h.Refreshes)-1].Stats
	if last.K != 1000 || len(last.Report.Recall) != 1000 || len(h.Final.TestAfter.Recall) != 1000 {
		t.Errorf("K = %d, %d recalls at the last refresh, %d on test; want 1000", last.K, len(last.Report.Recall), len(h.Final.TestAfter.Recall))
	}
}

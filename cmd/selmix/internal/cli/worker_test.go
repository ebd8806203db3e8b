package cli

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"selmix/cmd/selmix/internal/selmixtest"
	"selmix/core/npy"
	"selmix/core/worker"
	"selmix/runs"
	"selmix/runs/live/livetest"
	"selmix/runs/record"
	"selmix/runs/runstest"
)

// The PyTorch worker's tests need Debian's python3-torch and python3-numpy
// (.ci/run installs them); without them they are skipped, saying so.
const python = "/usr/bin/python3"

// torchErr is why python cannot import torch and numpy (nil: it can),
// asked once: importing torch takes a second or two of CPU.
var torchErr = sync.OnceValue(func() error { return exec.Command(python, "-c", "import torch, numpy").Run() })

func needTorch(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the PyTorch worker")
	}
	if err := torchErr(); err != nil {
		t.Skipf("%s cannot import torch and numpy (apt install python3-torch python3-numpy): %v", python, err)
	}
}

// repoRoot is the repository's top folder (the tests run in their package's).
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "..")
}

// features writes a long-tailed Gaussian-cluster problem on features —
// train (ρ = 100), val and test, and a nearest-class-mean head — and
// returns the folder. noise sets how hard it is.
func features(t *testing.T, K, d int, noise float64, seed int) string {
	t.Helper()
	dir := t.TempDir()
	script := fmt.Sprintf(`
import numpy as np
rng = np.random.default_rng(%d)
K, d, noise = %d, %d, %g
means = rng.normal(size=(K, d))
def gen(counts):
    x = np.concatenate([means[k] + noise * rng.normal(size=(c, d)) for k, c in enumerate(counts)]).astype(np.float32)
    y = np.concatenate([np.full(c, k) for k, c in enumerate(counts)]).astype(np.int64)
    return x, y
counts = [max(2, int(round(500 * 100 ** (-k / (K - 1))))) for k in range(K)]
for name, c in (("train", counts), ("val", [100] * K), ("test", [200] * K)):
    x, y = gen(c)
    np.savez(name + ".npz", x=x, y=y)
np.savez("head.npz", W=means.T.astype(np.float64), b=-0.5 * (means ** 2).sum(1))
`, seed, K, d, noise)
	cmd := exec.Command(python, "-c", script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("writing features: %v\n%s", err, out)
	}
	return dir
}

// workerCmd is the command line of the PyTorch worker on recipe args.
func workerCmd(t *testing.T, args ...string) []string {
	return append([]string{"--worker", "--", python, filepath.Join(repoRoot(t), "workers", "torch", "selmix_worker.py"), "--threads", "1"}, args...)
}

func featureArgs(dir string) []string {
	return []string{"--recipe", "features", "--train", filepath.Join(dir, "train.npz"), "--val", filepath.Join(dir, "val.npz"),
		"--test", filepath.Join(dir, "test.npz"), "--head", filepath.Join(dir, "head.npz")}
}

var workerRun = []string{"--set", "finetune.steps=200", "--set", "finetune.refresh=25", "--set", "finetune.checkpoint_every=2", "--set", "record.plots=false"}

// Both recipes run 200 steps under selmix; the worker's stderr lands in the
// run's worker.log; replay (which starts the worker again) is identical.
func TestTorchWorkerRecipes(t *testing.T) {
	t.Parallel()
	needTorch(t)
	root := t.TempDir()
	fm := []string{"--recipe", "fmnist", "--n1", "60", "--val-per-class", "20", "--test-per-class", "20", "--pretrain-epochs", "1",
		"--pretrained", filepath.Join(t.TempDir(), "fmnist.pt")}
	if _, err := os.Stat("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"); err != nil {
		fm = nil
		t.Log("no dataset-fashion-mnist: the fmnist recipe is not run")
	}
	for _, rec := range [][]string{featureArgs(features(t, 10, 16, 1.2, 1)), fm} {
		if rec == nil {
			continue
		}
		out := selmixtest.Run(t, append(append([]string{"run", "--headless", "-q", "--runs", root}, workerRun...), workerCmd(t, rec...)...)...)
		m := selmixtest.RunIDRe.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("%s: no run id:\n%s", rec[1], out)
		}
		r, err := runs.Open(root, m[1])
		if err != nil {
			t.Fatal(err)
		}
		if st := r.EffectiveStatus(); st != runs.StatusFinished {
			t.Fatalf("%s: status %s\n%s", rec[1], st, out)
		}
		if !strings.Contains(out, "worker: ") || !strings.Contains(out, "in its requests of") {
			t.Errorf("%s: the run does not report the worker's share of its time:\n%s", rec[1], out)
		}
		if b, err := os.ReadFile(filepath.Join(r.Dir, "worker.log")); err != nil || len(b) == 0 {
			t.Errorf("%s: worker.log: %v (%d bytes)", rec[1], err, len(b))
		}
		rep := selmixtest.Run(t, "replay", "--runs", root, m[1])
		if !strings.Contains(rep, "is identical to "+m[1]) {
			t.Errorf("%s: replay did not report identity:\n%s", rec[1], rep)
		}
	}
}

// A worker run stopped by SIGTERM at a refresh, stopped again after
// resuming, then resumed to the end, logs and concludes exactly what an
// uninterrupted one does — the worker's state (model, optimizer, RNG, P)
// crosses the checkpoint.
func TestTorchWorkerStopResume(t *testing.T) {
	t.Parallel()
	needTorch(t)
	root := livetest.ShortDir(t) // it holds the control socket
	feat := featureArgs(features(t, 10, 16, 1.2, 2))
	args := append(append([]string{"--runs", root}, workerRun...), workerCmd(t, feat...)...)
	out := selmixtest.Run(t, append([]string{"run", "--headless", "-q"}, args...)...)
	want := runstest.ReadOutcome(t, root, selmixtest.RunIDRe.FindStringSubmatch(out)[1])

	id := stopAtLine(t, root, append([]string{"run", "--headless"}, args...), "step    75/")
	stopAtLine(t, root, []string{"resume", "--runs", root, id}, "step   150/")
	selmixtest.Run(t, "resume", "-q", "--runs", root, id)
	got := runstest.ReadOutcome(t, root, id)
	runstest.SameOutcome(t, "stopped and resumed worker run", got, want)
}

// stopAtLine runs selmix with args, sends SIGTERM when it prints a line
// starting with prefix, checks it exits 143, and returns the run's id.
func stopAtLine(t *testing.T, root string, args []string, prefix string) string {
	t.Helper()
	cmd, sc := selmixtest.Start(t, nil, args...)
	var out selmixtest.Output
	for sc.Scan() {
		line := sc.Text()
		out.Add(line)
		if strings.HasPrefix(line, prefix) {
			cmd.Process.Signal(syscall.SIGTERM)
			break
		}
	}
	selmixtest.Drain(sc)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 143 {
		t.Fatalf("selmix %s: %v, want exit 143\n%s", strings.Join(args[:1], " "), err, out.String())
	}
	if out.ID == "" {
		t.Fatalf("no run id in:\n%s", out.String())
	}
	return out.ID
}

// A detached worker run goes on without its terminal; attach --follow
// watches it to the end; ps lists it while it lives.
func TestTorchWorkerDetachAttach(t *testing.T) {
	t.Parallel()
	needTorch(t)
	root := livetest.ShortDir(t) // it holds the control socket
	feat := featureArgs(features(t, 10, 16, 1.2, 3))
	args := append([]string{"run", "--detach", "--runs", root, "--set", "finetune.steps=2000", "--set", "finetune.refresh=100", "--set", "record.plots=false"}, workerCmd(t, feat...)...)
	out := selmixtest.Run(t, args...)
	if !strings.Contains(out, "started in the background") {
		t.Fatalf("detach:\n%s", out)
	}
	id := strings.Fields(strings.TrimPrefix(out, "run "))[0]
	ps := selmixtest.Run(t, "ps", "--runs", root)
	if !strings.Contains(ps, id) {
		t.Errorf("ps does not list the live worker run %s:\n%s", id, ps)
	}
	follow := selmixtest.Run(t, "attach", "--follow", "--runs", root, id)
	if !strings.Contains(follow, "step  2000/2000") {
		t.Errorf("attach --follow did not see the end:\n%s", selmixtest.LastLines(follow, 5))
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := runs.Open(root, id)
		if err == nil && r.EffectiveStatus() == runs.StatusFinished && !r.Live {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the detached run did not finish: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A worker killed mid-run by SIGKILL (what the kernel's out-of-memory
// killer sends) stops the run, saying so and naming what bounds memory;
// resume starts a new worker from the last checkpoint and finishes.
func TestTorchWorkerKilled(t *testing.T) {
	t.Parallel()
	needTorch(t)
	root := t.TempDir()
	feat := featureArgs(features(t, 10, 16, 1.2, 4))
	marker := fmt.Sprintf("--build-seed=%d", os.Getpid()) // finds this test's worker among processes
	cmd, sc := selmixtest.Start(t, nil, append([]string{"run", "--headless", "--runs", root, "--set", "finetune.steps=4000",
		"--set", "finetune.refresh=50", "--set", "finetune.checkpoint_every=1", "--set", "record.plots=false"}, workerCmd(t, append(feat, marker)...)...)...)
	var out selmixtest.Output
	for sc.Scan() {
		line := sc.Text()
		out.Add(line)
		if strings.HasPrefix(line, "step   200/") {
			// The pattern is anchored: selmix's own command line holds the
			// worker's too.
			if err := exec.Command("pkill", "-KILL", "-f", "^"+python+" .*"+marker).Run(); err != nil {
				t.Fatalf("pkill the worker: %v", err)
			}
			break
		}
	}
	for sc.Scan() { // the rest, for the message
		out.Add(sc.Text())
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("after its worker was killed, selmix: %v, want exit 1\n%s", err, out.String())
	}
	msg := out.String()
	if !strings.Contains(msg, "worker exited during") || !strings.Contains(msg, "killed by SIGKILL (out of memory?)") || !strings.Contains(msg, "lower finetune.batch") {
		t.Errorf("the message does not say the worker was killed, perhaps for memory:\n%s", selmixtest.LastLines(msg, 4))
	}
	id := out.ID
	r, err := runs.Open(root, id)
	if err != nil {
		t.Fatal(err)
	}
	if st := r.EffectiveStatus(); st != runs.StatusStopped {
		t.Errorf("status %s, want stopped", st)
	}
	h, err := record.Load(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Errors) != 0 {
		t.Errorf("error events %v, want none", h.Errors)
	}
	selmixtest.Run(t, "resume", "-q", "--runs", root, id)
	if r, _ := runs.Open(root, id); r.EffectiveStatus() != runs.StatusFinished {
		t.Errorf("after resume: status %s, want finished", r.EffectiveStatus())
	}
}

// The same long-tailed features (K = 10), the same head, the same
// budget: the in-process identity head and the PyTorch worker's features
// recipe reach test min recall within 1.5 points of each other, mean of 3
// seeds (their samplers draw different numbers, so single runs differ).
func TestTorchWorkerParity(t *testing.T) {
	t.Parallel()
	needTorch(t)
	dir := features(t, 10, 16, 1.6, 5)
	root := t.TempDir()
	common := []string{"--runs", root, "--set", "finetune.steps=1000", "--set", "finetune.refresh=25", "--set", "record.plots=false"}
	minRecall := func(args ...string) float64 {
		t.Helper()
		out := selmixtest.Run(t, append(append([]string{"run", "--headless", "-q"}, common...), args...)...)
		r, err := runs.Open(root, selmixtest.RunIDRe.FindStringSubmatch(out)[1])
		if err != nil {
			t.Fatal(err)
		}
		h, err := record.Load(r)
		if err != nil || h.Final == nil {
			t.Fatalf("no final summary: %v", err)
		}
		return h.Final.TestAfter.MinRecall
	}
	var goMean, torchMean float64
	for seed := 1; seed <= 3; seed++ {
		s := fmt.Sprintf("seed=%d", seed)
		g := minRecall("--set", s, "--set", "data.source=features", "--set", "model.arch=identity",
			"--set", "data.train="+filepath.Join(dir, "train.npz"), "--set", "data.val="+filepath.Join(dir, "val.npz"),
			"--set", "data.test="+filepath.Join(dir, "test.npz"), "--set", "data.head="+filepath.Join(dir, "head.npz"))
		w := minRecall(append([]string{"--set", s}, workerCmd(t, featureArgs(dir)...)...)...)
		t.Logf("seed %d: test min recall %.4f in process, %.4f with the PyTorch worker", seed, g, w)
		goMean += g / 3
		torchMean += w / 3
	}
	t.Logf("mean of 3 seeds: %.4f in process, %.4f with the PyTorch worker", goMean, torchMean)
	if math.Abs(goMean-torchMean) > 0.015 {
		t.Errorf("test min recall %.4f (in process) and %.4f (PyTorch) differ by more than 1.5 points", goMean, torchMean)
	}
}

// For the statistics a worker sends, the P it receives is exactly the P
// `selmix gain` computes from them: the frames are recorded on the way
// (tee), the statistics written as a gain input, and the two P compared
// bit for bit.
func TestTorchWorkerGetsGainsP(t *testing.T) {
	t.Parallel()
	needTorch(t)
	dir := features(t, 10, 16, 1.6, 6)
	root := t.TempDir()
	in, out := filepath.Join(dir, "in.bin"), filepath.Join(dir, "out.bin")
	wcmd := strings.Join(append([]string{python, filepath.Join(repoRoot(t), "workers", "torch", "selmix_worker.py"), "--threads", "1"}, featureArgs(dir)...), " ")
	selmixtest.Run(t, "run", "--headless", "-q", "--runs", root, "--set", "finetune.steps=10", "--set", "finetune.refresh=10",
		"--set", "finetune.objective=mean-recall@cov", "--set", "finetune.s=3", "--set", "finetune.cov_margin=0.004", "--set", "record.plots=false",
		// selmix gain has no memory of earlier refreshes: the run's
		// multipliers are the memoryless ones too.
		"--set", "finetune.multipliers=memoryless",
		"--worker", "--", "/bin/sh", "-c", fmt.Sprintf("tee %s | %s | tee %s", in, wcmd, out))
	frames := func(path string) []*worker.Frame {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var fs []*worker.Frame
		for {
			fr, err := worker.ReadFrame(f)
			if err != nil {
				return fs
			}
			fs = append(fs, fr)
		}
	}
	reqs, reps := frames(in), frames(out)
	if len(reqs) != len(reps) || len(reqs) < 4 {
		t.Fatalf("%d requests, %d replies recorded", len(reqs), len(reps))
	}
	var stats, hello *worker.Frame
	var P []float64
	for i, rq := range reqs {
		switch rq.Header["op"] {
		case "hello":
			hello = reps[i]
		case "evaluate":
			if rq.Header["centroids"] == true && P == nil {
				stats = reps[i]
			}
		case "train":
			if p := rq.Array("P"); p != nil && P == nil {
				P = p.Floats()
			}
		}
	}
	if stats == nil || P == nil || hello == nil {
		t.Fatal("no validation statistics or no P in the recorded frames")
	}
	K := 10
	rows := stats.Header["rows"].(float64)
	C := mat.NewDense(K, K, stats.Array("C").Floats())
	C.Scale(1/rows, C) // as the client does
	var counts []float64
	for _, v := range hello.Header["train_counts"].([]any) {
		counts = append(counts, v.(float64))
	}
	statsPath := filepath.Join(dir, "stats.npz")
	if err := npy.WriteNPZ(statsPath,
		npy.Entry{Name: "C", Shape: []int{K, K}, Data: C.RawMatrix().Data},
		npy.Entry{Name: "Z", Shape: []int{K, 16}, Data: stats.Array("Z").Floats()},
		npy.Entry{Name: "W", Shape: []int{16, K}, Data: stats.Array("W").Floats()},
		npy.Entry{Name: "b", Shape: []int{K}, Data: stats.Array("b").Floats()},
		npy.Entry{Name: "train_counts", Shape: []int{K}, Data: counts}); err != nil {
		t.Fatal(err)
	}
	gout := filepath.Join(dir, "gain.npz")
	// The margin too: the worker path aims as the engine does (Go-only math).
	selmixtest.Run(t, "gain", "--stats", statsPath, "--objective", "mean-recall@cov", "--s", "3", "--cov-margin", "0.004", "--out", gout)
	z, err := npy.OpenNPZ(gout)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	a, err := z.Open("P")
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, K*K)
	if err := a.ReadFloat64(want); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if math.Float64bits(P[i]) != math.Float64bits(want[i]) {
			t.Fatalf("P[%d]: the worker received %v, selmix gain computes %v", i, P[i], want[i])
		}
	}
}

// Policy resample through the worker: every train request is in mode
// resample and carries SelMix's P at each refresh (the worker refuses a
// mode it does not know), the run finishes and its steps move the model.
func TestTorchWorkerResample(t *testing.T) {
	t.Parallel()
	needTorch(t)
	dir := features(t, 10, 16, 1.6, 7)
	root := t.TempDir()
	in := filepath.Join(dir, "in.bin")
	wcmd := strings.Join(append([]string{python, filepath.Join(repoRoot(t), "workers", "torch", "selmix_worker.py"), "--threads", "1"}, featureArgs(dir)...), " ")
	out := selmixtest.Run(t, "run", "--headless", "-q", "--runs", root, "--set", "finetune.steps=100", "--set", "finetune.refresh=25",
		"--set", "finetune.policy=resample", "--set", "finetune.objective=min-recall", "--set", "record.plots=false",
		"--worker", "--", "/bin/sh", "-c", fmt.Sprintf("tee %s | %s", in, wcmd))
	r, err := runs.Open(root, selmixtest.RunIDRe.FindStringSubmatch(out)[1])
	if err != nil {
		t.Fatal(err)
	}
	h, err := record.Load(r)
	if err != nil || h.Final == nil {
		t.Fatalf("no final summary: %v\n%s", err, out)
	}
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	trains, withP := 0, 0
	for {
		fr, err := worker.ReadFrame(f)
		if err != nil {
			break
		}
		if fr.Header["op"] != "train" {
			continue
		}
		trains++
		if fr.Header["mode"] != "resample" {
			t.Errorf("train request in mode %v, want resample", fr.Header["mode"])
		}
		if p := fr.Array("P"); p != nil {
			withP++
			var sum float64
			for _, v := range p.Floats() {
				sum += v
			}
			if math.Abs(sum-1) > 1e-9 {
				t.Errorf("P sums to %v", sum)
			}
		}
	}
	// Refreshes at 0, 25, 50 and 75 each send a new P.
	if trains < 4 || withP != 4 {
		t.Errorf("%d train requests, %d with P; want ≥ 4 and 4", trains, withP)
	}
	if h.Final.TestAfter.MinRecall == h.Final.TestBefore.MinRecall && h.Final.TestAfter.MeanRecall == h.Final.TestBefore.MeanRecall {
		t.Errorf("100 resample steps left test recalls as they were: %+v", h.Final.TestAfter)
	}
}

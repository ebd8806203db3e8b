package bench

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"selmix/runs"
	"selmix/runs/record"
)

// torchPlain is bench/torch_plain.py, the plain PyTorch side; it is
// written next to the runs so the binary needs no source tree.
//
//go:embed torch_plain.py
var torchPlain []byte

// WorkerOptions says what `selmix bench worker` measures: the reference
// PyTorch worker (Python, Script = …/selmix_worker.py, Args its options:
// the recipe's) run by selmix, against torch_plain.py doing the same steps
// and evaluation passes as an ordinary DataLoader loop.
type WorkerOptions struct {
	Binary  string   // the selmix binary
	Python  string   // the worker's interpreter
	Script  string   // selmix_worker.py
	Args    []string // the worker's options: --recipe … and the recipe's
	Steps   int
	Batch   int
	Refresh int
	// LoaderWorkers is the plain loop's DataLoader num_workers, and the
	// worker's --loader-workers when it has that option.
	LoaderWorkers int
	Repeat        int    // runs of each side; the median is reported
	Dir           string // scratch folder: the runs, the plain script
	Log           io.Writer
}

// WorkerSide is one side's measurement: the fine-tuning's wall time (from
// the first evaluation to the last, setup excluded), the images it read
// (training and evaluation), the process's whole wall time, and on CUDA
// the mean GPU utilisation over the fine-tuning and the peak GPU memory
// in use (nvidia-smi; NaN when not measured).
type WorkerSide struct {
	Name         string
	Seconds      float64
	Steps        int
	Images       int64
	ProcessWall  float64
	GPUUtil      float64 // 0–1
	GPUMemMiB    float64
	TorchPeakMiB float64 // plain side only: torch.cuda.max_memory_allocated
	// EvalSeconds is the part of Seconds spent on evaluation passes
	// (validation, unlabeled and test; for the worker its evaluate and
	// pseudo requests, from its trace); NaN when not measured.
	EvalSeconds   float64
	Device        string
	LoaderWorkers string // how the side reads its data
}

// EvalShare is the share of the fine-tuning's wall time spent on
// evaluation passes, NaN when not measured.
func (s WorkerSide) EvalShare() float64 { return s.EvalSeconds / s.Seconds }

// StepsPerSec and ImagesPerSec are over the fine-tuning's wall time.
func (s WorkerSide) StepsPerSec() float64  { return float64(s.Steps) / s.Seconds }
func (s WorkerSide) ImagesPerSec() float64 { return float64(s.Images) / s.Seconds }

// WorkerResult is both sides of one sitting.
type WorkerResult struct {
	Plain, Selmix WorkerSide
	Notes         []string
}

// EvalPasses returns the evaluation passes of a run of steps with a
// refresh every refresh steps: over validation (and the unlabeled set) at
// steps 0, refresh, 2·refresh, … and at the end; over test before and
// after.
func EvalPasses(steps, refresh int) (val, test int) {
	return (steps+refresh-1)/refresh + 1, 2
}

type plainReport struct {
	Seconds float64          `json:"seconds"`
	Eval    *float64         `json:"eval_seconds"`
	Start   float64          `json:"start"`
	End     float64          `json:"end"`
	Steps   int              `json:"steps"`
	Images  int64            `json:"images"`
	Sizes   map[string]int64 `json:"sizes"`
	Device  string           `json:"device"`
	PeakMem *float64         `json:"peak_mem"`
}

// Worker measures both sides o.Repeat times, alternating (plain first),
// and returns each side's median run by fine-tuning time.
func Worker(ctx context.Context, o WorkerOptions) (*WorkerResult, error) {
	if o.Repeat < 1 {
		o.Repeat = 1
	}
	plainPath := filepath.Join(o.Dir, "torch_plain.py")
	if err := os.WriteFile(plainPath, torchPlain, 0o644); err != nil {
		return nil, err
	}
	res := &WorkerResult{}
	wargs := slices.Clone(o.Args)
	loaderNote := fmt.Sprintf("worker, --loader-workers %d", o.LoaderWorkers)
	if hasOption(ctx, o.Python, o.Script, "--loader-workers") {
		wargs = append(wargs, "--loader-workers", strconv.Itoa(o.LoaderWorkers))
	} else {
		loaderNote = "worker, in process"
		res.Notes = append(res.Notes, "this worker has no --loader-workers: it reads its data in its main process")
	}
	gpu := startGPUSampler(ctx)
	defer gpu.stop()
	var plains, selmixes []WorkerSide
	for i := range o.Repeat {
		fmt.Fprintf(o.Log, "sitting %d/%d: plain PyTorch loop…\n", i+1, o.Repeat)
		p, err := o.plain(ctx, plainPath, gpu)
		if err != nil {
			return nil, fmt.Errorf("plain PyTorch loop: %w", err)
		}
		plains = append(plains, p)
		fmt.Fprintf(o.Log, "sitting %d/%d: selmix + worker…\n", i+1, o.Repeat)
		s, err := o.selmix(ctx, wargs, loaderNote, i, p.Images, gpu)
		if err != nil {
			return nil, fmt.Errorf("selmix + worker: %w", err)
		}
		selmixes = append(selmixes, s)
	}
	res.Plain, res.Selmix = median(plains), median(selmixes)
	if !gpu.ok() {
		res.Notes = append(res.Notes, "GPU utilisation and memory: not measured (no CUDA device, or no nvidia-smi)")
	}
	return res, nil
}

func median(s []WorkerSide) WorkerSide {
	s = slices.Clone(s)
	slices.SortFunc(s, func(a, b WorkerSide) int { return cmpFloat(a.Seconds, b.Seconds) })
	return s[len(s)/2]
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (o WorkerOptions) plain(ctx context.Context, script string, gpu *gpuSampler) (WorkerSide, error) {
	args := append([]string{script, "--worker-dir", filepath.Dir(o.Script), "--steps", strconv.Itoa(o.Steps),
		"--batch", strconv.Itoa(o.Batch), "--refresh", strconv.Itoa(o.Refresh), "--num-workers", strconv.Itoa(o.LoaderWorkers), "--"}, o.Args...)
	out, u, err := measureGroup(ctx, o.Python, args...)
	if err != nil {
		return WorkerSide{}, fmt.Errorf("%v\n%s", err, tail(out, 20))
	}
	var rep plainReport
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rep); err != nil || rep.Seconds <= 0 {
		return WorkerSide{}, fmt.Errorf("torch_plain.py printed no report\n%s", tail(out, 20))
	}
	s := WorkerSide{Name: "plain PyTorch", Seconds: rep.Seconds, Steps: rep.Steps, Images: rep.Images, ProcessWall: u.wall.Seconds(),
		Device: rep.Device, LoaderWorkers: fmt.Sprintf("DataLoader(num_workers=%d)", o.LoaderWorkers), TorchPeakMiB: math.NaN(), EvalSeconds: math.NaN()}
	if rep.Eval != nil {
		s.EvalSeconds = *rep.Eval
	}
	if rep.PeakMem != nil {
		s.TorchPeakMiB = *rep.PeakMem / (1 << 20)
	}
	s.GPUUtil, s.GPUMemMiB = gpu.window(unixTime(rep.Start), unixTime(rep.End))
	return s, nil
}

func unixTime(sec float64) time.Time {
	return time.Unix(0, int64(sec*1e9))
}

// selmix runs the worker under selmix. Its images are the plain loop's
// count: both sides take the same steps and the same evaluation passes.
func (o WorkerOptions) selmix(ctx context.Context, wargs []string, loaderNote string, i int, images int64, gpu *gpuSampler) (WorkerSide, error) {
	root := filepath.Join(o.Dir, fmt.Sprintf("runs-%d", i))
	args := []string{"run", "--headless", "-q", "--runs", root,
		"--set", fmt.Sprintf("finetune.steps=%d", o.Steps), "--set", fmt.Sprintf("finetune.batch=%d", o.Batch),
		"--set", fmt.Sprintf("finetune.refresh=%d", o.Refresh), "--set", "record.plots=false",
		// The plain loop measures test before and after only, not at each new best.
		"--set", "record.best=false",
		"--worker", "--", o.Python, o.Script}
	out, u, err := measureGroup(ctx, o.Binary, append(args, wargs...)...)
	if err != nil {
		return WorkerSide{}, fmt.Errorf("%v\n%s", err, tail(out, 20))
	}
	rs, err := runs.List(root)
	if err != nil || len(rs) != 1 {
		return WorkerSide{}, fmt.Errorf("no run recorded in %s: %v", root, err)
	}
	h, err := record.Load(&rs[0])
	if err != nil {
		return WorkerSide{}, err
	}
	if h.Final == nil {
		return WorkerSide{}, fmt.Errorf("run %s did not finish", rs[0].Meta.ID)
	}
	end, err := finalTime(filepath.Join(rs[0].Dir, "events.jsonl"))
	if err != nil {
		return WorkerSide{}, err
	}
	s := WorkerSide{Name: "selmix + worker", Seconds: h.Final.Seconds, Steps: h.Final.Steps, Images: images, ProcessWall: u.wall.Seconds(),
		LoaderWorkers: loaderNote, TorchPeakMiB: math.NaN(), EvalSeconds: math.NaN()}
	if ops, err := traceSeconds(filepath.Join(rs[0].Dir, runs.WorkerLogName)); err == nil {
		if ev, ok := ops["evaluate"]; ok {
			s.EvalSeconds = ev + ops["pseudo"]
		}
	}
	s.GPUUtil, s.GPUMemMiB = gpu.window(end.Add(-time.Duration(h.Final.Seconds*float64(time.Second))), end)
	return s, nil
}

// traceLine is a line of the worker's request trace
// (SELMIX_WORKER_TRACE=1): "selmix-torch: OP [what]: SECONDS s".
var traceLine = regexp.MustCompile(`^selmix-torch: ([a-z]+)\b[^:]*: ([0-9.]+) s$`)

// traceSeconds sums the seconds of the requests the worker traced in the
// log at path, by op.
func traceSeconds(path string) (map[string]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ops := map[string]float64{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	for sc.Scan() {
		if m := traceLine.FindStringSubmatch(sc.Text()); m != nil {
			v, _ := strconv.ParseFloat(m[2], 64)
			ops[m[1]] += v
		}
	}
	return ops, sc.Err()
}

// finalTime is the time of the run's final event (written as the
// fine-tuning's summary was taken).
func finalTime(path string) (time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 64<<20)
	var t time.Time
	for sc.Scan() {
		var ev struct {
			Kind string    `json:"kind"`
			Time time.Time `json:"time"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Kind == record.KindFinal {
			t = ev.Time
		}
	}
	if err := sc.Err(); err != nil {
		return t, fmt.Errorf("%s: %w", path, err)
	}
	if t.IsZero() {
		return t, fmt.Errorf("%s: no final event", path)
	}
	return t, nil
}

// hasOption reports whether the worker's --help lists opt.
func hasOption(ctx context.Context, python, script, opt string) bool {
	out, err := exec.CommandContext(ctx, python, script, "--help").Output()
	return err == nil && strings.Contains(string(out), opt)
}

// measureGroup runs a command in its own process group, its output
// captured, with the worker's request trace on (SELMIX_WORKER_TRACE: a
// line per request with its time in the run's worker.log, which gives the
// time spent evaluating); a cancelled ctx sends the group SIGTERM (selmix stops its run,
// Python ends its loader processes), then SIGKILL 30 s later.
func measureGroup(ctx context.Context, bin string, args ...string) (string, usage, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "SELMIX_WORKER_TRACE=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	out := &tailBuffer{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	t := time.Now()
	err := cmd.Run()
	u := usage{wall: time.Since(t)}
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			u.rss = ru.Maxrss << 10
		}
	}
	if ctx.Err() != nil {
		return out.String(), u, ctx.Err()
	}
	return out.String(), u, err
}

// tail is the last n lines of s, made safe for a terminal.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return printable(strings.Join(lines[max(0, len(lines)-n):], "\n"))
}

// printable replaces control characters (but newlines and tabs) and
// invalid UTF-8 in s by U+FFFD: a subprocess's output must not drive the
// terminal.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || (r != utf8.RuneError && !unicode.IsControl(r)) {
			return r
		}
		return utf8.RuneError
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

// tailBuffer keeps the last max bytes written to it (a subprocess's
// output: its last lines are the report or the error).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// gpuSampler reads nvidia-smi's utilisation and memory of GPU 0 every
// 100 ms, stamped as they arrive.
type gpuSampler struct {
	mu      sync.Mutex
	samples []gpuSample
	cmd     *exec.Cmd
	done    chan struct{}
}

type gpuSample struct {
	t         time.Time
	util, mem float64 // percent, MiB
}

func startGPUSampler(ctx context.Context) *gpuSampler {
	g := &gpuSampler{done: make(chan struct{})}
	bin, err := exec.LookPath("nvidia-smi")
	if err != nil {
		close(g.done)
		return g
	}
	g.cmd = exec.CommandContext(ctx, bin, "--id=0", "--query-gpu=utilization.gpu,memory.used", "--format=csv,noheader,nounits", "-lms", "100")
	pipe, err := g.cmd.StdoutPipe()
	if err != nil || g.cmd.Start() != nil {
		g.cmd = nil
		close(g.done)
		return g
	}
	go func() {
		defer close(g.done)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			f := strings.Split(sc.Text(), ",")
			if len(f) != 2 {
				continue
			}
			u, err1 := strconv.ParseFloat(strings.TrimSpace(f[0]), 64)
			m, err2 := strconv.ParseFloat(strings.TrimSpace(f[1]), 64)
			if err1 == nil && err2 == nil {
				g.mu.Lock()
				g.samples = append(g.samples, gpuSample{time.Now(), u, m})
				g.mu.Unlock()
			}
		}
	}()
	return g
}

func (g *gpuSampler) ok() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.samples) > 0
}

// window is the mean utilisation (0–1) and the peak memory (MiB) of the
// samples in [from, to]; NaN without samples.
func (g *gpuSampler) window(from, to time.Time) (util, mem float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n, sum, peak := 0, 0.0, 0.0
	for _, s := range g.samples {
		if s.t.Before(from) || s.t.After(to) {
			continue
		}
		n++
		sum += s.util
		peak = max(peak, s.mem)
	}
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	return sum / float64(n) / 100, peak
}

func (g *gpuSampler) stop() {
	if g.cmd != nil && g.cmd.Process != nil {
		g.cmd.Process.Kill()
		<-g.done
		g.cmd.Wait()
	}
}

// Markdown is the result as a table and a line of ratios.
func (r *WorkerResult) Markdown(o WorkerOptions) string {
	var b strings.Builder
	val, test := EvalPasses(o.Steps, o.Refresh)
	fmt.Fprintf(&b, "%d steps of batch %d (2×%d images through the backbone), refresh %d: %d validation and %d test passes; device %s\n\n",
		o.Steps, o.Batch, o.Batch, o.Refresh, val, test, r.Plain.Device)
	fmt.Fprintf(&b, "| side | data | fine-tuning wall | evaluation | steps/s | images/s | GPU util | peak GPU memory | process wall |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range []WorkerSide{r.Plain, r.Selmix} {
		mem := "–"
		if !math.IsNaN(s.GPUMemMiB) {
			mem = fmt.Sprintf("%.0f MiB", s.GPUMemMiB)
			if !math.IsNaN(s.TorchPeakMiB) {
				mem += fmt.Sprintf(" (torch: %.0f MiB)", s.TorchPeakMiB)
			}
		}
		util := "–"
		if !math.IsNaN(s.GPUUtil) {
			util = fmt.Sprintf("%.0f %%", 100*s.GPUUtil)
		}
		eval := "–"
		if !math.IsNaN(s.EvalSeconds) {
			eval = fmt.Sprintf("%.2f s (%.0f %%)", s.EvalSeconds, 100*s.EvalShare())
		}
		fmt.Fprintf(&b, "| %s | %s | %.2f s | %s | %.2f | %.0f | %s | %s | %.1f s |\n", s.Name, s.LoaderWorkers, s.Seconds, eval, s.StepsPerSec(), s.ImagesPerSec(), util, mem, s.ProcessWall)
	}
	fmt.Fprintf(&b, "\nselmix / plain: wall %.2f×, steps/s %.2f×, images/s %.2f×\n",
		r.Selmix.Seconds/r.Plain.Seconds, r.Selmix.StepsPerSec()/r.Plain.StepsPerSec(), r.Selmix.ImagesPerSec()/r.Plain.ImagesPerSec())
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\nNote: %s\n", n)
	}
	return b.String()
}

// ErrWorkerScript is returned for a command that does not run the
// reference worker.
var ErrWorkerScript = errors.New("the command after -- must be PYTHON …/selmix_worker.py [its options]: the plain loop builds the same recipe with the reference worker's code")

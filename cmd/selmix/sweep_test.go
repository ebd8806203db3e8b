package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"selmix/cmd/selmix/internal/selmixtest"
	"selmix/core/search"
	"selmix/runs"
	"selmix/runs/live/livetest"
	"selmix/runs/record"
	"selmix/runs/runstest"
	"selmix/runs/sweep"
	"selmix/runs/sweep/sweeptest"
)

// sweepBase is a small run of the built-in experiment that checkpoints
// often (every 50 steps), so interruptions land between checkpoints.
const sweepBase = `[base]
"finetune.steps" = 300
"finetune.refresh" = 25
"finetune.checkpoint_every" = 2
"record.plots" = false
`

var sweepIDRe = regexp.MustCompile(`(?m)^sweep (\S+): \d+ members in `)

func writeSpec(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func waitUntil(t *testing.T, limit time.Duration, what string, ok func() bool) {
	t.Helper()
	waitOr(t, limit, what, ok, nil)
}

// waitOr is waitUntil that adds diag() to the failure.
func waitOr(t *testing.T, limit time.Duration, what string, ok func() bool, diag func() string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			msg := ""
			if diag != nil {
				msg = "\n" + diag()
			}
			t.Fatalf("timed out after %v waiting for %s%s", limit, what, msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// memberRun is member i's run now (nil before it exists).
func memberRun(t *testing.T, root, id string, i int) *runs.Run {
	t.Helper()
	s, err := sweep.Open(root, id)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Run(i)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// midRun reports whether member i's run is live and between its first
// checkpoint and its end.
func midRun(t *testing.T, root, id string, i int) bool {
	r := memberRun(t, root, id, i)
	return r != nil && r.Live && r.Meta.Steps >= 50 && r.Meta.Steps < 250
}

// sessions counts the starts in a run's log: 1 for an uninterrupted run.
func sessions(t *testing.T, r *runs.Run) int {
	t.Helper()
	h, err := record.Load(r)
	if err != nil {
		t.Fatal(err)
	}
	return len(h.Starts)
}

// bgProcess is a selmix process the test runs in the background.
type bgProcess struct {
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{} // closed when it has exited; code is then set
	code int
}

func (p *bgProcess) ended() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// startSweepProcess starts `selmix ARGS` (a sweep) in the background and
// returns it with the sweep's id once it printed it.
func startSweepProcess(t *testing.T, env []string, args ...string) (*bgProcess, string) {
	t.Helper()
	cmd := exec.Command(selmixtest.Binary(t), args...)
	cmd.Env = env
	p := &bgProcess{cmd: cmd, out: &lockedBuffer{}, done: make(chan struct{})}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !p.ended() {
			cmd.Process.Kill()
			<-p.done
		}
	})
	ids := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			fmt.Fprintln(p.out, sc.Text())
			if m := sweepIDRe.FindStringSubmatch(sc.Text()); m != nil {
				ids <- m[1]
			}
		}
	}()
	go func() {
		cmd.Wait()
		p.code = cmd.ProcessState.ExitCode()
		pw.Close()
		close(p.done)
	}()
	select {
	case id := <-ids:
		return p, id
	case <-time.After(30 * time.Second):
		t.Fatalf("no sweep id printed:\n%s", p.out.String())
	}
	return nil, ""
}

// startTwoMidRun starts the two-member sweep spec (a local one) with
// --parallel 2 and the extra arguments in a short temp dir, and waits
// until both members are mid-run at once. It returns the dir, the runs
// root in it, the executor's process and the sweep's id.
func startTwoMidRun(t *testing.T, spec string, extra ...string) (dir, root string, p *bgProcess, id string) {
	t.Helper()
	dir = livetest.ShortDir(t)
	root = filepath.Join(dir, "r")
	path := writeSpec(t, dir, "spec.toml", spec)
	p, id = startSweepProcess(t, os.Environ(), append(append([]string{"sweep", path}, extra...), "--parallel", "2", "--runs", root)...)
	waitUntil(t, 60*time.Second, "both members mid-run at once", func() bool {
		return midRun(t, root, id, 0) && midRun(t, root, id, 1)
	})
	return dir, root, p, id
}

// A bad spec is refused before anything is written, naming the file, the
// place and the key; the sweeps folder never confuses the run store.
func TestSweepBadSpec(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root := filepath.Join(dir, "runs")
	p := writeSpec(t, dir, "bad.toml", sweepBase+"[axes]\n\"finetune.polcy\" = [\"selmix\"]\n")
	out, code := selmixtest.Code(t, os.Environ(), "sweep", p, "--runs", root)
	if code != 2 || !strings.Contains(out, `bad.toml: [axes] "finetune.polcy": --set finetune.polcy: unknown key finetune.polcy`) {
		t.Errorf("exit %d:\n%s", code, out)
	}
	p = writeSpec(t, dir, "bad2.toml", sweepBase+"[[rows]]\n\"data.source\" = \"features\"\n[axes]\nseed = [4]\n")
	out, code = selmixtest.Code(t, os.Environ(), "sweep", p, "--runs", root)
	if code != 2 || !strings.Contains(out, `bad2.toml: member 0 ([[rows]] 1, seed=4): data.train: required`) {
		t.Errorf("exit %d:\n%s", code, out)
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused spec wrote %s", root)
	}
	out, code = selmixtest.Code(t, os.Environ(), "sweep", "status", "nope", "--runs", root)
	if code != 2 || !strings.Contains(out, `no sweep "nope"`) {
		t.Errorf("status of no sweep: exit %d\n%s", code, out)
	}
}

// The local executor runs two members at once, each in its own process
// group; a kill -9 of one loses nothing of the other; sweep resume
// finishes the killed one exactly as an uninterrupted run of it; the
// report and the run store agree.
func TestSweepLocalKill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	dir, root, p, id := startTwoMidRun(t, "name = \"loc\"\n"+sweepBase+"[axes]\n\"finetune.policy\" = [\"selmix\", \"uniform\"]\nseed = [1]\n", "--executor", "local")
	victim := memberRun(t, root, id, 1)
	if err := syscall.Kill(victim.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 60*time.Second, "the executor to end", p.ended)
	text := p.out.String()
	if p.code != 1 {
		t.Errorf("executor exit code %d with a member killed, want 1\n%s", p.code, text)
	}
	if !regexp.MustCompile(`(?m)^member 1  policy=uniform seed=1  killed`).MatchString(text) ||
		!regexp.MustCompile(`(?m)^member 0  policy=selmix seed=1  finished`).MatchString(text) {
		t.Errorf("executor output:\n%s", text)
	}
	if r := memberRun(t, root, id, 0); r.EffectiveStatus() != runs.StatusFinished || sessions(t, r) != 1 {
		t.Errorf("member 0: %s after %d sessions; the kill of member 1 must not touch it", r.EffectiveStatus(), sessions(t, r))
	}
	if r := memberRun(t, root, id, 1); r.EffectiveStatus() != runs.StatusCrashed {
		t.Errorf("killed member: status %s, want crashed", r.EffectiveStatus())
	}
	st, _ := selmixtest.Code(t, os.Environ(), "sweep", "status", id, "--runs", root)
	if !strings.Contains(st, "2 members: 1 finished, 0 running, 0 pending, 1 failed") {
		t.Errorf("status after the kill:\n%s", st)
	}

	res, code := selmixtest.Code(t, os.Environ(), "sweep", "resume", id, "--runs", root)
	if code != 0 || !strings.Contains(res, "resuming 1 members: 1 (crashed)") {
		t.Fatalf("resume: exit %d\n%s", code, res)
	}
	resumed := memberRun(t, root, id, 1)
	if resumed.EffectiveStatus() != runs.StatusFinished || resumed.Meta.ID != victim.Meta.ID || sessions(t, resumed) != 2 {
		t.Fatalf("member 1 after resume: run %s %s, %d sessions; want run %s finished in 2", resumed.Meta.ID, resumed.EffectiveStatus(), sessions(t, resumed), victim.Meta.ID)
	}
	// The uninterrupted reference: the member's own settings, with the
	// threads the executor gave it.
	s, err := sweep.Open(root, id)
	if err != nil {
		t.Fatal(err)
	}
	refRoot := filepath.Join(dir, "ref")
	args := []string{"run", "--headless", "-q", "--runs", refRoot}
	for _, kv := range s.Members[1].Sets {
		args = append(args, "--set", kv)
	}
	refOut, code := selmixtest.Code(t, append(os.Environ(), "OPENBLAS_NUM_THREADS=1", "GOMAXPROCS=1"), args...)
	m := selmixtest.RunIDRe.FindStringSubmatch(refOut)
	if code != 0 || m == nil {
		t.Fatalf("reference run: exit %d\n%s", code, refOut)
	}
	runstest.SameOutcome(t, "member 1 killed and resumed", runstest.ReadOutcome(t, root, resumed.Meta.ID), runstest.ReadOutcome(t, refRoot, m[1]))

	st, _ = selmixtest.Code(t, os.Environ(), "sweep", "status", id, "--runs", root)
	if !strings.Contains(st, "2 members: 2 finished, 0 running, 0 pending, 0 failed") {
		t.Errorf("status at the end:\n%s", st)
	}
	again, code := selmixtest.Code(t, os.Environ(), "sweep", "resume", id, "--runs", root)
	if code != 0 || !strings.Contains(again, "nothing to resume") {
		t.Errorf("resume of a finished sweep: exit %d\n%s", code, again)
	}
	// The run store lists the two runs and nothing of the sweep folder.
	ls := selmixtest.Run(t, "runs", "ls", "--runs", root)
	if n := strings.Count(ls, id+"-"); n != 2 || strings.Contains(ls, "broken") || strings.Contains(ls, "sweeps") {
		t.Errorf("runs ls:\n%s", ls)
	}
	if sl := selmixtest.Run(t, "sweep", "ls", "--runs", root); !regexp.MustCompile(id + `\s+local\s+2\s+2\s+0\s+0\s+0`).MatchString(sl) {
		t.Errorf("sweep ls:\n%s", sl)
	}

	// The report: one row per policy (seed is averaged), each member's
	// test metrics as its summary.json has them, and the figures.
	out := selmixtest.Run(t, "sweep", "report", id, "--runs", root, "--out", filepath.Join(dir, "rep.md"))
	if strings.Contains(out, "| selmix |") || !strings.Contains(out, "wrote "+filepath.Join(dir, "rep.md")) {
		t.Errorf("sweep report --out printed the table, or not where it wrote it:\n%s", out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "rep.md"))
	if err != nil {
		t.Fatal(err)
	}
	rep := string(b)
	for i, pol := range []string{"selmix", "uniform"} {
		r := memberRun(t, root, id, i)
		b, err := os.ReadFile(filepath.Join(r.Dir, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		var sum record.SummaryData
		if err := json.Unmarshal(b, &sum); err != nil {
			t.Fatal(err)
		}
		ta := sum.TestAfter
		row := fmt.Sprintf("| %s | 1/1 | %.4f | %.4f | %.4f | %.4f | %.4f | %.4f |", pol, float64(sum.TestObjectivesAfter["min-recall"]),
			float64(ta.MeanRecall), float64(ta.MinRecall), float64(ta.HMean), float64(ta.GMean), float64(ta.MinCoverage))
		if !strings.Contains(rep, row+"\n") {
			t.Errorf("report lacks %q:\n%s", row, rep)
		}
	}
	for _, f := range []string{"rep.md", "rep-figures/compare-final.png", "rep-figures/compare-psi_min-recall.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("report: %v", err)
		}
	}
}

// Ctrl-C at the local executor stops its members cleanly (130, resumable)
// and the executor exits 130; sweep resume finishes them.
func TestSweepLocalInterrupt(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	_, root, p, id := startTwoMidRun(t, "name = \"int\"\n"+sweepBase+"[axes]\nseed = [1, 2]\n")
	p.cmd.Process.Signal(os.Interrupt)
	waitUntil(t, 60*time.Second, "the executor to end", p.ended)
	out := p.out
	if p.code != 130 {
		t.Errorf("executor exit code %d after SIGINT, want 130\n%s", p.code, out.String())
	}
	for i := range 2 {
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^member %d  seed=%d  stopped \(exit 130`, i, i+1)).MatchString(out.String()) {
			t.Errorf("member %d's end:\n%s", i, out.String())
		}
		if r := memberRun(t, root, id, i); r.EffectiveStatus() != runs.StatusStopped {
			t.Errorf("member %d: %s, want stopped", i, r.EffectiveStatus())
		}
	}
	res, code := selmixtest.Code(t, os.Environ(), "sweep", "resume", id, "--runs", root)
	if code != 0 || !strings.Contains(res, "2 finished, 0 stopped, 0 failed") {
		t.Errorf("resume: exit %d\n%s", code, res)
	}
}

// ablationSweep is a finished sweep of two policies by two seeds (20
// steps each, run locally), made once for the tests that only read it:
// its runs root and id.
func ablationSweep(t *testing.T) (root, id string) {
	t.Helper()
	dir := selmixtest.Shared(t, "ablation-sweep", func(dir string) error {
		spec := filepath.Join(dir, "abl.toml")
		text := "name = \"abl\"\n[base]\n\"finetune.steps\" = 20\n\"finetune.refresh\" = 10\n\"record.plots\" = false\n" +
			"[axes]\n\"finetune.policy\" = [\"selmix\", \"uniform\"]\nseed = [1, 2]\n"
		if err := os.WriteFile(spec, []byte(text), 0o644); err != nil {
			return err
		}
		out, code := selmixtest.Code(t, os.Environ(), "sweep", spec, "--runs", filepath.Join(dir, "runs"), "--executor", "local", "--gpus", "none", "--parallel", "2")
		m := sweepIDRe.FindStringSubmatch(out)
		if code != 0 || m == nil {
			return fmt.Errorf("sweep: exit %d\n%s", code, out)
		}
		return os.WriteFile(filepath.Join(dir, "id"), []byte(m[1]), 0o644)
	})
	b, err := os.ReadFile(filepath.Join(dir, "id"))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "runs"), string(b)
}

// sweep report --vs adds the seed-paired difference against a reference
// (each member's metric minus its reference's of the same seed, mean ±
// sample std over the seeds), worked out here from the members' own
// summary.json; a --vs it cannot take exits 2 with one line naming the
// flag and why.
func TestSweepReportVs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	dir := t.TempDir()
	root, id := ablationSweep(t)
	// ψ of the optimized objective (min recall) on test at the last step
	// of members 0-3: selmix seeds 1, 2, uniform seeds 1, 2.
	var psi [4]float64
	for i := range psi {
		b, err := os.ReadFile(filepath.Join(memberRun(t, root, id, i).Dir, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		var sum record.SummaryData
		if err := json.Unmarshal(b, &sum); err != nil {
			t.Fatal(err)
		}
		psi[i] = float64(sum.TestObjectivesAfter["min-recall"])
	}
	d1, d2 := psi[0]-psi[2], psi[1]-psi[3]
	mean := (d1 + d2) / 2
	std := math.Abs(d1-d2) / math.Sqrt2 // the sample std of two values
	rep := filepath.Join(dir, "rep.md")
	for _, vs := range []string{"policy=uniform", "finetune.policy=\"uniform\""} {
		selmixtest.Run(t, "sweep", "report", id, "--runs", root, "--out", rep, "--vs", vs)
		b, err := os.ReadFile(rep)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("| selmix | 2 | %+.4f ± %.4f |", mean, std)
		at := strings.Index(string(b), "### Test at the last step")
		if at < 0 {
			t.Fatalf("--vs %s: no table at the last step:\n%s", vs, b)
		}
		last := string(b)[at:]
		if !strings.Contains(last, "Paired by seed against policy=uniform") || !strings.Contains(last, want) || !strings.Contains(last, "| uniform | reference | – |") {
			t.Errorf("--vs %s: the last step's differences lack %q or the reference's row:\n%s", vs, want, b)
		}
	}

	seedless := sweeptest.New(t, "name = \"noseed\"\n[axes]\n\"finetune.policy\" = [\"selmix\", \"uniform\"]\n", search.ExecLocal)
	for _, c := range []struct {
		name, root, sweep, vs, want string
	}{
		{"unknown key", root, id, "polcy=uniform", `selmix: --vs "polcy=uniform": no column polcy: the sweep varies finetune.policy, seed`},
		{"value no member has", root, id, "policy=resample", `selmix: --vs "policy=resample": no member has policy=resample (its values: selmix, uniform)`},
		{"seed", root, id, "seed=1", `selmix: --vs "seed=1": seed is what members are paired over; name another column`},
		{"not KEY=VALUE", root, id, "uniform", `selmix: --vs "uniform": want KEY=VALUE, such as finetune.policy=resample`},
		{"empty", root, id, "", `selmix: --vs "": want KEY=VALUE, such as finetune.policy=resample`},
		{"no seeds", seedless.Root, seedless.ID, "policy=uniform", `selmix: --vs "policy=uniform": the sweep has no seed axis: there is nothing to pair members over`},
	} {
		out, code := selmixtest.Code(t, os.Environ(), "sweep", "report", c.sweep, "--runs", c.root, "--out", filepath.Join(dir, "bad.md"), "--vs", c.vs)
		if code != 2 || strings.TrimSpace(out) != c.want {
			t.Errorf("%s: exit %d\n%s\nwant exit 2 and the one line %q", c.name, code, out, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.md")); !os.IsNotExist(err) {
		t.Errorf("a bad --vs wrote a report (%v)", err)
	}
}

// export --compare of a sweep's members names each by its values of the
// sweep's columns, not by its run name, and with --group-by draws the
// final metrics with a bar per group: the mean over its runs, with the
// std (whiskers) and how many runs in its CSV.
func TestSweepExportCompare(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	root, id := ablationSweep(t)
	var ids []string
	var mr [4]float64 // mean recall on test at the last step, of members 0-3
	for i := range mr {
		r := memberRun(t, root, id, i)
		ids = append(ids, r.Meta.ID)
		b, err := os.ReadFile(filepath.Join(r.Dir, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		var sum record.SummaryData
		if err := json.Unmarshal(b, &sum); err != nil {
			t.Fatal(err)
		}
		mr[i] = float64(sum.TestAfter.MeanRecall)
	}
	out := filepath.Join(t.TempDir(), "cmp")
	selmixtest.Run(t, append([]string{"export", "--compare", "--runs", root, "--out", out, "--format", "svg", "--group-by", "policy"}, ids...)...)
	b, err := os.ReadFile(filepath.Join(out, "compare-final.csv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"policy=selmix seed=1", "policy=selmix seed=2", "policy=uniform seed=1", "policy=uniform seed=2"} {
		if !strings.Contains(string(b), "\n"+l) {
			t.Errorf("compare-final.csv does not name a member %q:\n%s", l, b)
		}
	}
	if strings.Contains(string(b), id+"-") {
		t.Errorf("compare-final.csv names members by their run names:\n%s", b)
	}
	b, err = os.ReadFile(filepath.Join(out, "compare-final-by-finetune.policy.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Split(l, ",")
		if len(f) == 6 && f[1] == "mean_recall" {
			rows[f[0]] = f[2:5]
		}
	}
	for _, c := range []struct {
		group string
		a, b  float64
	}{
		{"finetune.policy=selmix (2)", mr[0], mr[1]},
		{"finetune.policy=uniform (2)", mr[2], mr[3]},
	} {
		// A run kept a model: the end and the best step each have a bar.
		r, ok := rows[c.group+" at the end"]
		if !ok {
			r, ok = rows[c.group]
		}
		if !ok || r[0] != "2" || !near(r[1], math.Abs(c.a-c.b)/math.Sqrt2) || !near(r[2], (c.a+c.b)/2) {
			t.Errorf("%s: mean recall n, std, mean %q, want 2, %v, %v:\n%s", c.group, r, math.Abs(c.a-c.b)/math.Sqrt2, (c.a+c.b)/2, b)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "compare-final-by-finetune.policy.svg")); err != nil {
		t.Error(err)
	}
}

// near reports whether the CSV field s is x to 1e-9.
func near(s string, x float64) bool {
	v, err := strconv.ParseFloat(s, 64)
	return err == nil && math.Abs(v-x) < 1e-9
}

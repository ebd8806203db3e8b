package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"selmix/cmd/selmix/internal/selmixtest"
	"selmix/runs"
	"selmix/runs/live/livetest"
	"selmix/runs/record"
	"selmix/runs/runstest"
	"selmix/runs/sweep"
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

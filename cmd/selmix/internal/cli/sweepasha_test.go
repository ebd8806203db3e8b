package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"selmix/cmd/selmix/internal/selmixtest"
	"selmix/runs/live/livetest"
	"selmix/runs/runstest"
	"selmix/runs/sweep"
)

// ashaSpec is successive halving over three seeds of the built-in
// experiment, 300 steps refreshing every 25: rungs at 50, 150 and 300.
const ashaSpec = `name = "ash"
[base]
"finetune.steps" = 300
"finetune.refresh" = 25
"record.checkpoint_every" = 2
"record.plots" = false
[axes]
seed = [1, 2, 3]
[asha]
min_steps = 50
`

var ashaIDRe = regexp.MustCompile(`(?m)^sweep (\S+): \d+ members in `)

// ashaArgs run the spec at path one member at a time, each with one
// thread (as the reference run), under runs root root.
func ashaArgs(path, root string) []string {
	return []string{"sweep", path, "--search", "asha", "--runs", root, "--parallel", "1", "--threads", "1", "--gpus", "none"}
}

// ashaOutput is a process's output, read while it runs.
type ashaOutput struct {
	mu sync.Mutex
	b  strings.Builder
}

func (o *ashaOutput) add(line string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.b.WriteString(line + "\n")
}

func (o *ashaOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// background starts selmix with args; out collects its output as it
// runs, and done closes once it has ended and every line it wrote is in
// out. The test's cleanup kills it if it still runs.
func background(t *testing.T, args ...string) (*exec.Cmd, *ashaOutput, chan struct{}) {
	t.Helper()
	cmd := exec.Command(selmixtest.Binary(t), args...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := &ashaOutput{}
	done, scanned := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			out.add(sc.Text())
		}
	}()
	go func() { cmd.Wait(); pw.Close(); <-scanned; close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			cmd.Process.Kill()
			<-done
		}
	})
	return cmd, out, done
}

// ashaDecisions are a sweep's decisions, without their times.
func ashaDecisions(t *testing.T, root, id string) []string {
	t.Helper()
	s, err := sweep.Open(root, id)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := s.Schedule()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range sc.Decisions {
		out = append(out, fmt.Sprintf("%s %d@%d stop %d rank %d/%d step %d ψ %v", d.Op, d.Member, d.Rung, d.StopAt, d.Rank, d.Of, d.Step, d.PsiValue()))
	}
	return out
}

// Successive halving over a grid, locally: each member stops at its rung
// (one step past the rung's refresh, checkpointed) and the best go on. A
// sweep whose executor is interrupted (SIGINT) after its first promotion,
// while the promoted member runs to its next rung, resumes with sweep
// resume and takes the same decisions, with the same ψ, as one never
// interrupted; the member that ran to the end, stopped at every rung and
// once by the signal, ends exactly as the same member run without a
// pause. Status and report show the schedule and the steps spent.
func TestSweepASHA(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	dir := livetest.ShortDir(t)
	spec := filepath.Join(dir, "spec.toml")
	if err := os.WriteFile(spec, []byte(ashaSpec), 0o644); err != nil {
		t.Fatal(err)
	}

	// The interrupted sweep, in the background.
	rootB := filepath.Join(dir, "b")
	cmd, out, done := background(t, ashaArgs(spec, rootB)...)
	var idB string
	for deadline := time.Now().Add(60 * time.Second); idB == ""; time.Sleep(20 * time.Millisecond) {
		if m := ashaIDRe.FindStringSubmatch(out.String()); m != nil {
			idB = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no sweep id printed:\n%s", out.String())
		}
	}

	// The uninterrupted sweep, meanwhile.
	rootA := filepath.Join(dir, "a")
	cmdA := exec.Command(selmixtest.Binary(t), ashaArgs(spec, rootA)...)
	var bufA bytes.Buffer
	cmdA.Stdout, cmdA.Stderr = &bufA, &bufA
	if err := cmdA.Start(); err != nil {
		t.Fatal(err)
	}
	var outA []byte
	var errA error
	doneA := make(chan struct{})
	go func() { errA = cmdA.Wait(); outA = bufA.Bytes(); close(doneA) }()
	t.Cleanup(func() {
		select {
		case <-doneA:
		default:
			cmdA.Process.Kill()
			<-doneA
		}
	})

	// Interrupt B once it promoted and its member is past its rung-0 stop.
	var winner int
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(120 * time.Second)
		for !ok() {
			select {
			case <-done:
				t.Fatalf("the sweep ended before %s:\n%s", what, out.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s:\n%s", what, out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("its first promotion", func() bool {
		m := regexp.MustCompile(`(?m)^member (\d+) .* promoted to rung 1 `).FindStringSubmatch(out.String())
		if m != nil {
			fmt.Sscan(m[1], &winner)
		}
		return m != nil
	})
	waitFor("the promoted member past step 51", func() bool {
		s, err := sweep.Open(rootB, idB)
		if err != nil {
			return false
		}
		r, err := s.Run(winner)
		return err == nil && r != nil && r.Live && r.Meta.Steps > 51
	})
	cmd.Process.Signal(os.Interrupt)
	select {
	case <-done:
	case <-time.After(120 * time.Second):
		t.Fatalf("the interrupted sweep did not end:\n%s", out.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.Contains(out.String(), "sweep "+idB+" interrupted; resumable with: selmix sweep resume "+idB) {
		t.Fatalf("interrupted sweep: exit %d, want 130\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), fmt.Sprintf("member %d  seed=%d  stopped on the way to rung 1 (150 steps) (exit 130", winner, winner+1)) {
		t.Errorf("the promoted member was not stopped on its way:\n%s", out.String())
	}
	st := selmixtest.Run(t, "sweep", "status", idB, "--runs", rootB)
	if !strings.Contains(st, "RUNG") || !strings.Contains(st, "50→150") || !strings.Contains(st, "schedule not complete") {
		t.Errorf("status of the interrupted sweep:\n%s", st)
	}
	<-doneA
	mA := ashaIDRe.FindStringSubmatch(string(outA))
	if errA != nil || mA == nil || !strings.Contains(string(outA), ": schedule complete: 5 reports, 0 stopped, 0 failed (") {
		t.Fatalf("uninterrupted sweep: %v\n%s", errA, outA)
	}
	idA := mA[1]
	want := ashaDecisions(t, rootA, idA)
	// Three start and reach rung 0; the best goes on to 150, and then,
	// with every member started and none in flight, to the end.
	if len(want) != 10 || want[6] != fmt.Sprintf("send %d@1 stop 151 rank 1/3 step 0 ψ NaN", winner) || !strings.HasPrefix(want[8], fmt.Sprintf("send %d@2 stop 0 rank 1/1", winner)) {
		t.Fatalf("uninterrupted decisions (member %d promoted first in the other):\n%s", winner, strings.Join(want, "\n"))
	}
	res, code := selmixtest.Code(t, os.Environ(), "sweep", "resume", idB, "--runs", rootB, "--threads", "1", "--gpus", "none")
	if code != 0 || !strings.Contains(res, fmt.Sprintf("continuing its schedule after 7 decisions; in flight: %d (to rung 1)", winner)) ||
		!strings.Contains(res, fmt.Sprintf("member %d  seed=%d  resumes to rung 1 (150 steps)", winner, winner+1)) {
		t.Fatalf("sweep resume: exit %d\n%s", code, res)
	}
	if got := ashaDecisions(t, rootB, idB); !reflect.DeepEqual(got, want) {
		t.Errorf("interrupted and resumed, decisions\n%s\nwant (uninterrupted)\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	again, code := selmixtest.Code(t, os.Environ(), "sweep", "resume", idB, "--runs", rootB)
	if code != 0 || !strings.Contains(again, "nothing to resume: the schedule of sweep "+idB+" is complete (10 decisions)") {
		t.Errorf("resume of a complete schedule: exit %d\n%s", code, again)
	}

	// The member that ran to the end, against the same member run whole.
	s, err := sweep.Open(rootB, idB)
	if err != nil {
		t.Fatal(err)
	}
	refRoot := filepath.Join(dir, "ref")
	args := []string{"run", "--headless", "-q", "--runs", refRoot}
	for _, kv := range s.Members[winner].Sets {
		args = append(args, "--set", kv)
	}
	refOut, code := selmixtest.Code(t, append(os.Environ(), "OPENBLAS_NUM_THREADS=1", "GOMAXPROCS=1"), args...)
	m := selmixtest.RunIDRe.FindStringSubmatch(refOut)
	if code != 0 || m == nil {
		t.Fatalf("reference run: exit %d\n%s", code, refOut)
	}
	for _, c := range []struct{ root, id, what string }{{rootB, idB, "stopped at two rungs and by SIGINT"}, {rootA, idA, "stopped at two rungs"}} {
		sw, err := sweep.Open(c.root, c.id)
		if err != nil {
			t.Fatal(err)
		}
		r, err := sw.Run(winner)
		if err != nil || r == nil {
			t.Fatalf("%s: no run of member %d (%v)", c.what, winner, err)
		}
		runstest.SameOutcome(t, fmt.Sprintf("member %d %s", winner, c.what), runstest.ReadOutcome(t, c.root, r.Meta.ID), runstest.ReadOutcome(t, refRoot, m[1]))
	}

	// Status and report: the rungs, the decisions, the steps against the
	// grid's (two members stopped at 51, one ran 300).
	st = selmixtest.Run(t, "sweep", "status", idA, "--runs", rootA)
	for _, w := range []string{"asha: rungs at 50, 150, 300 steps, eta 3; schedule complete; 402 steps of the grid's 900\n", "3 members: 1 finished, 0 running, 0 pending, 0 failed, 2 at a rung\n"} {
		if !strings.Contains(st, w) {
			t.Errorf("status lacks %q:\n%s", w, st)
		}
	}
	rep := selmixtest.Run(t, "sweep", "report", idA, "--runs", rootA, "--out", filepath.Join(dir, "rep.md"), "--format", "svg")
	b, err := os.ReadFile(filepath.Join(dir, "rep.md"))
	if err != nil {
		t.Fatalf("%v\n%s", err, rep)
	}
	for _, w := range []string{
		"## Successive halving (ASHA)", "Compute: 402 steps, 45% of the grid's 900 (3 members × 300 steps, each run to its end).",
		fmt.Sprintf("member %d (seed=%d) promoted to rung 1 (150 steps): rank 1 of 3 at rung 0", winner, winner+1),
		fmt.Sprintf("member %d (seed=%d) promoted to end (300 steps): rank 1 of 1 at rung 1", winner, winner+1),
		"| 1/3 |",
	} {
		if !strings.Contains(string(b), w) {
			t.Errorf("report lacks %q:\n%s", w, b)
		}
	}
}

// --search asha and pbt refuse, before anything is written, with one line
// and exit code 2: a spec whose members optimize different objectives
// without a metric, a bad table, nothing to explore, and a search it does
// not know.
func TestSweepASHABadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root := filepath.Join(dir, "runs")
	base := "[base]\n\"finetune.steps\" = 300\n\"finetune.refresh\" = 25\n"
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	objs := write("objs.toml", base+"[axes]\n\"finetune.objective\" = [\"min-recall\", \"hmean\"]\n")
	eta := write("eta.toml", base+"[axes]\nseed = [1]\n[asha]\neta = 1\n")
	seeds := write("seeds.toml", base+"[axes]\nseed = [1, 2]\n")
	drawn := write("drawn.toml", base+"[axes]\n\"finetune.s\" = { log_uniform = [0.5, 4.0] }\n")
	metricTypo := write("typo.toml", base+"[axes]\n\"finetune.s\" = [1.0, 2.0]\n[pbt]\nmetric = \"metrics/min_recal\"\n")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"objectives", []string{"sweep", objs, "--search", "asha"}, "selmix: " + objs + `: [asha] metric: the members optimize hmean, min-recall, whose ψ are not comparable: name a metric to rank them by, an objective or a reported metric (e.g. metric = "hmean" or metric = "metrics/min_recall")`},
		{"eta", []string{"sweep", eta, "--search", "asha"}, "selmix: " + eta + ": [asha] eta 1: want an integer ≥ 2 (each rung keeps 1/eta of the members)"},
		{"search", []string{"sweep", eta, "--search", "pbt2"}, `selmix: --search "pbt2": want grid, random, asha or pbt`},
		{"grid of a distribution", []string{"sweep", drawn}, "selmix: " + drawn + `: [axes] "finetune.s": log_uniform(0.5, 4) is drawn, not a grid's list: give --search random (or asha, pbt)`},
		{"no budget", []string{"sweep", drawn, "--search", "random"}, "selmix: " + drawn + `: [random] members: "finetune.s" (log_uniform(0.5, 4)) has no end: give a budget, members = N or steps = N`},
		{"metric", []string{"sweep", metricTypo, "--search", "pbt"}, "selmix: " + metricTypo + `: [pbt] metric "metrics/min_recal": unknown reported metric "min_recal" (valid: metrics/mean_recall, metrics/min_recall, metrics/hmean, metrics/gmean, metrics/min_coverage, metrics/accuracy, metrics/head_recall, metrics/tail_recall, metrics/min_ht_recall, metrics/head_coverage, metrics/tail_coverage, metrics/min_ht_coverage)`},
		{"pbt keys", []string{"sweep", seeds, "--search", "pbt"}, "selmix: " + seeds + `: [pbt] keys: nothing to explore: the spec varies no finetune key a run may change live (name them, e.g. keys = ["s", "lr"])`},
	} {
		code, stdout, stderr := runCLI(append(c.args, "--runs", root)...)
		if code != 2 || strings.TrimSpace(stderr) != c.want || stdout != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 2 and the one line %q", c.name, code, stdout, stderr, c.want)
		}
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("a refused sweep wrote %s (%v)", root, err)
	}
}

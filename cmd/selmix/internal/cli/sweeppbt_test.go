package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"selmix/cmd/selmix/internal/selmixtest"
	"selmix/runs/live/livetest"
	"selmix/runs/sweep"
)

// pbtSpec is population-based training over four values of s on the
// built-in experiment: 150 steps refreshing every 25, three generations
// of 50.
const pbtSpec = `name = "pop"
[base]
"finetune.steps" = 150
"finetune.refresh" = 25
"record.checkpoint_every" = 2
"record.plots" = false
[axes]
"finetune.s" = [0.5, 1, 2, 4]
[pbt]
interval = 50
`

func pbtArgs(path, root string) []string {
	return []string{"sweep", path, "--search", "pbt", "--runs", root, "--parallel", "2", "--threads", "1", "--gpus", "none"}
}

// pbtDecisions are a population's decisions without their times, the
// sweep's id taken out of run names, in a sorted order (members report as
// they finish).
func pbtDecisions(t *testing.T, root, id string) []string {
	t.Helper()
	s, err := sweep.Open(root, id)
	if err != nil {
		t.Fatal(err)
	}
	po, err := s.Population()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range po.Decisions {
		out = append(out, fmt.Sprintf("gen %d %s %d step %d ψ %v from %d at %d run %s sets %v", d.Gen, d.Op, d.Member, d.Step, d.PsiValue(), d.From, d.At, strings.TrimPrefix(d.Run, id), d.Sets))
	}
	slices.Sort(out)
	return out
}

// Population-based training, locally: every member stops at each
// generation's end, the worst copies the best from its checkpoint there
// (a fork of its run, the explore a control from pbt) and all go on. A
// sweep interrupted (SIGINT) while a copy runs resumes with sweep resume
// to the same decisions, with the same ψ, as one never interrupted; every
// final member replays identical from its lineage.
func TestSweepPBT(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	dir := livetest.ShortDir(t)
	spec := filepath.Join(dir, "spec.toml")
	if err := os.WriteFile(spec, []byte(pbtSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	rootA, rootB := filepath.Join(dir, "a"), filepath.Join(dir, "b")

	// The interrupted sweep, in the background.
	cmd, out, done := background(t, pbtArgs(spec, rootB)...)
	// Interrupt B once a copy runs its next generation.
	deadline := time.Now().Add(180 * time.Second)
	for !strings.Contains(out.String(), " continues from member ") {
		select {
		case <-done:
			t.Fatalf("the sweep ended before a copy ran:\n%s", out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for a copy to run:\n%s", out.String())
		}
	}
	cmd.Process.Signal(os.Interrupt)
	select {
	case <-done:
	case <-time.After(120 * time.Second):
		t.Fatalf("the interrupted sweep did not end:\n%s", out.String())
	}
	m := ashaIDRe.FindStringSubmatch(out.String())
	if code := cmd.ProcessState.ExitCode(); code != 130 || m == nil {
		t.Fatalf("interrupted sweep: exit %d, want 130\n%s", code, out.String())
	}
	idB := m[1]
	st := selmixtest.Run(t, "sweep", "status", idB, "--runs", rootB)
	if head, _, _ := strings.Cut(st, "\n"); !strings.Contains(head, " GEN ") || !strings.Contains(st, "pbt: 3 generations of 50 steps; generation 1; ") || !strings.Contains(st, "population not complete") {
		t.Errorf("status of the interrupted population:\n%s", st)
	}

	// The uninterrupted sweep.
	outA, code := selmixtest.Code(t, os.Environ(), pbtArgs(spec, rootA)...)
	mA := ashaIDRe.FindStringSubmatch(outA)
	if code != 0 || mA == nil || !strings.Contains(outA, ": population complete: 12 reports, 2 exploits, 0 stopped, 0 failed (") {
		t.Fatalf("uninterrupted sweep: exit %d\n%s", code, outA)
	}
	idA := mA[1]
	want := pbtDecisions(t, rootA, idA)
	if len(want) != 16 {
		t.Fatalf("uninterrupted decisions: %d, want 12 reports, 2 exploits and 2 advances:\n%s", len(want), strings.Join(want, "\n"))
	}

	res, code := selmixtest.Code(t, os.Environ(), "sweep", "resume", idB, "--runs", rootB, "--parallel", "2", "--threads", "1", "--gpus", "none")
	if code != 0 || !strings.Contains(res, "sweep "+idB+": continuing its population at generation 1 after ") || !strings.Contains(res, ": population complete: ") {
		t.Fatalf("sweep resume: exit %d\n%s", code, res)
	}
	if got := pbtDecisions(t, rootB, idB); !reflect.DeepEqual(got, want) {
		t.Errorf("interrupted and resumed, decisions\n%s\nwant (uninterrupted)\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if st := selmixtest.Run(t, "sweep", "status", idB, "--runs", rootB); !regexp.MustCompile(`pbt: 3 generations of 50 steps; generation 2; 2 exploits; population complete; leading: member \d \(ψ 0\.\d{4}, s=[\d.]+\)\n4 members: 4 finished`).MatchString(st) || !regexp.MustCompile(`GEN +NOW`).MatchString(st) {
		t.Errorf("status of the resumed population:\n%s", st)
	}
	rep := filepath.Join(dir, "rep.md")
	selmixtest.Run(t, "sweep", "report", idB, "--runs", rootB, "--out", rep, "--format", "svg")
	if b, err := os.ReadFile(rep); err != nil || !strings.Contains(string(b), "## Population-based training (PBT)") || !strings.Contains(string(b), "### Exploits, in the order taken\n\n1. after generation 0: member ") || !regexp.MustCompile(`(?m)^- member \d+ \(.*\): \S+ → \S+-g\d`).Match(b) {
		t.Errorf("sweep report (%v):\n%s", err, b)
	}
	again, code := selmixtest.Code(t, os.Environ(), "sweep", "resume", idB, "--runs", rootB)
	if code != 0 || !strings.Contains(again, "nothing to resume: the population of sweep "+idB+" is complete (16 decisions)") {
		t.Errorf("resume of a complete population: exit %d\n%s", code, again)
	}

	// Every final member replays identical from its lineage; a copy's
	// explore is a control from pbt at its first step.
	s, err := sweep.Open(rootB, idB)
	if err != nil {
		t.Fatal(err)
	}
	po, err := s.Population()
	if err != nil {
		t.Fatal(err)
	}
	copies := 0
	for i := range s.Members {
		r, err := s.Run(i)
		if err != nil || r == nil {
			t.Fatalf("member %d: no run (%v)", i, err)
		}
		if r.Meta.Name != po.RunName(i) {
			t.Errorf("member %d runs in %s, want %s", i, r.Meta.Name, po.RunName(i))
		}
		rep, code := selmixtest.Code(t, os.Environ(), "replay", "--runs", rootB, r.Meta.ID)
		if code != 0 || !strings.Contains(rep, " is identical to "+r.Meta.ID) {
			t.Errorf("member %d (lineage %v): replay exit %d\n%s", i, po.Lineage(i), code, rep)
		}
		if e := po.Exploited(i); e != nil {
			copies++
			show := selmixtest.Run(t, "runs", "show", "--runs", rootB, r.Meta.ID)
			want := regexp.MustCompile(fmt.Sprintf(`step +%d  set %s \(pbt\)`, e.At, regexp.QuoteMeta(strings.TrimPrefix(e.Sets[0], "finetune."))))
			if !want.MatchString(show) {
				t.Errorf("member %d's run %s does not show its explore %v at step %d:\n%s", i, r.Meta.ID, e.Sets, e.At, show)
			}
		}
	}
	if copies == 0 {
		t.Error("no member was copied")
	}
}

// explore = forecast: each exploit ranks its candidates by the Δψ that
// `selmix sweep forecast` forecasts from the copied run's checkpoint, logs
// them, and takes the highest; the forecast of the taken one is what
// sweep forecast says again for it, and the report says what it chose.
func TestSweepPBTForecast(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	dir := livetest.ShortDir(t)
	spec := filepath.Join(dir, "spec.toml")
	text := strings.Replace(pbtSpec, "interval = 50", "interval = 50\nexplore = \"forecast\"\ncandidates = 4", 1)
	if err := os.WriteFile(spec, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "runs")
	out, code := selmixtest.Code(t, os.Environ(), pbtArgs(spec, root)...)
	m := ashaIDRe.FindStringSubmatch(out)
	if code != 0 || m == nil || !strings.Contains(out, "the best forecast of 4 explores finetune.s=") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	s, err := sweep.Open(root, m[1])
	if err != nil {
		t.Fatal(err)
	}
	po, err := s.Population()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range po.Decisions {
		if d.Op != sweep.PBTExploit {
			continue
		}
		n++
		if len(d.Ranked) != 4 {
			t.Fatalf("exploit of member %d ranks %d candidates, want 4", d.Member, len(d.Ranked))
		}
		best := d.Ranked[0]
		var cands [][]string
		for _, c := range d.Ranked {
			if math.IsNaN(float64(c.Forecast)) {
				t.Errorf("exploit of member %d: candidate %v has no forecast", d.Member, c.Sets)
			}
			if c.Forecast > best.Forecast {
				best = c
			}
			cands = append(cands, c.Sets)
		}
		if !slices.Equal(best.Sets, d.Sets) {
			t.Errorf("exploit of member %d took %v; the highest forecast is %v: %+v", d.Member, d.Sets, best.Sets, d.Ranked)
		}
		// The forecasts again, from the checkpoint the fork started from.
		in, _ := json.Marshal(cands)
		cmd := exec.Command(selmixtest.Binary(t), "sweep", "forecast", s.Dir, d.Parent, strconv.Itoa(d.At))
		cmd.Stdin = strings.NewReader(string(in))
		got, err := cmd.Output()
		var fs []*float64
		if err != nil || json.Unmarshal(got, &fs) != nil || len(fs) != 4 {
			t.Fatalf("sweep forecast: %v, %s", err, got)
		}
		for k, f := range fs {
			if f == nil || *f != float64(d.Ranked[k].Forecast) {
				t.Errorf("candidate %v: forecast again %v, logged %v", cands[k], f, d.Ranked[k].Forecast)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d exploits, want 2 (one per generation end)", n)
	}
	rep := filepath.Join(dir, "rep.md")
	selmixtest.Run(t, "sweep", "report", m[1], "--runs", root, "--out", rep, "--format", "svg")
	if b, err := os.ReadFile(rep); err != nil || !regexp.MustCompile(`, the best of 4; perturb's own [+-]\d\.\d{4}\)`).Match(b) || !strings.Contains(string(b), "forecast s (the best Δψ the copied run's linear model forecasts of 4 perturbations)") {
		t.Errorf("sweep report (%v):\n%s", err, b)
	}
	// Bad input: one line, exit 2.
	for _, c := range []struct{ stdin, step, want string }{
		{"not json", "51", "selmix: standard input: want a JSON array of candidates, each an array of finetune.key=value, at most 1048576 bytes"},
		{"[]", "x", `selmix: step "x": want a checkpoint's step ≥ 1`},
	} {
		cmd := exec.Command(selmixtest.Binary(t), "sweep", "forecast", s.Dir, "nope", c.step)
		cmd.Stdin = strings.NewReader(c.stdin)
		b, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != 2 || strings.TrimSpace(string(b)) != c.want {
			t.Errorf("sweep forecast %s < %q: exit %d, %q; want 2 and %q", c.step, c.stdin, cmd.ProcessState.ExitCode(), b, c.want)
		}
	}
}

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"selmix/app/sweepexec/slurmtest"
	"selmix/cmd/selmix/internal/selmixtest"
	"selmix/runs"
	"selmix/runs/live/livetest"
	"selmix/runs/runstest"
	"selmix/runs/sweep"
)

var submittedRe = regexp.MustCompile(`(?m)^submitted Slurm job (\d+), array (\S+) `)

// Sweeps on a real (single-node, throw-away) Slurm cluster:
//
//	(a) a 6-member sweep completes as a job array and sweep status says so;
//	(b) scancel of a running task, then sweep resume, finishes its member
//	    exactly as the uninterrupted run of the same member in (a);
//	(c) a simulated preemption warning (SIGTERM to the batch shell, as
//	    --signal=B:TERM@S sends it) with requeue = true makes the task
//	    requeue itself; the requeued task resumes the run to the same end.
func TestSweepSlurm(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a Slurm cluster")
	}
	t.Parallel()
	cl := slurmtest.Start(t)
	env := cl.Env()
	dir := livetest.ShortDir(t)
	root := filepath.Join(dir, "r")
	status := func(id string) string {
		out, code := selmixtest.Code(t, env, "sweep", "status", id, "--runs", root)
		if code != 0 {
			t.Fatalf("sweep status: exit %d\n%s", code, out)
		}
		return out
	}
	waitStatus := func(id, summary string, limit time.Duration) string {
		t.Helper()
		var last string
		deadline := time.Now().Add(limit)
		for {
			last = status(id)
			if strings.Contains(last, summary) {
				return last
			}
			if time.Now().After(deadline) {
				t.Fatalf("sweep %s: no %q after %v:\n%s\nslurm output: %s", id, summary, limit, last, slurmOutputs(t, root, id))
			}
			time.Sleep(time.Second)
		}
	}

	// (a)
	t0 := time.Now()
	specA := writeSpec(t, dir, "a.toml", "name = \"gridA\"\n"+sweepBase+
		"[axes]\n\"finetune.policy\" = [\"selmix\", \"uniform\", \"greedy\"]\nseed = [1, 2]\n[slurm]\nmax_parallel = 2\n")
	out, code := selmixtest.Code(t, env, "sweep", specA, "--runs", root)
	m := sweepIDRe.FindStringSubmatch(out)
	if code != 0 || m == nil || !strings.Contains(out, "array 0-5%2 (6 members)") {
		t.Fatalf("sweep a.toml: exit %d\n%s", code, out)
	}
	idA := m[1]
	st := waitStatus(idA, "6 members: 6 finished, 0 running, 0 pending, 0 failed", 4*time.Minute)
	// The tasks end a moment after their runs.
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(st, "COMPLETED") != 6 && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		st = status(idA)
	}
	if strings.Count(st, "COMPLETED") != 6 {
		t.Errorf("(a) Slurm states:\n%s", st)
	}
	if w, code := selmixtest.Code(t, env, "sweep", "status", idA, "--watch", "--runs", root); code != 0 || !strings.Contains(w, "6 finished") {
		t.Errorf("status --watch of an ended sweep: exit %d\n%s", code, w)
	}
	t.Logf("(a) 6 members through sbatch in %.1fs", time.Since(t0).Seconds())

	// (b) and (c)
	t0 = time.Now()
	specB := writeSpec(t, dir, "b.toml", "name = \"gridB\"\n"+sweepBase+
		"[axes]\n\"finetune.policy\" = [\"selmix\", \"uniform\"]\nseed = [1]\n[slurm]\nmax_parallel = 2\nsignal_seconds = 60\nrequeue = true\n")
	out, code = selmixtest.Code(t, env, "sweep", specB, "--runs", root)
	m, sm := sweepIDRe.FindStringSubmatch(out), submittedRe.FindStringSubmatch(out)
	if code != 0 || m == nil || sm == nil {
		t.Fatalf("sweep b.toml: exit %d\n%s", code, out)
	}
	idB, job := m[1], sm[1]
	script, err := os.ReadFile(filepath.Join(root, "sweeps", idB, "sweep.sbatch"))
	if err != nil || !strings.Contains(string(script), "#SBATCH --signal=B:TERM@60\n") {
		t.Fatalf("batch script (%v):\n%s", err, script)
	}
	diag := func() string {
		return status(idB) + "\nslurm output:\n" + slurmOutputs(t, root, idB) + "\nsqueue:\n" +
			cl.Output(t, "squeue", "--array", "--states=all", "--format=%i %T %r %S")
	}
	waitOr(t, 2*time.Minute, "both members of b mid-run", func() bool { return midRun(t, root, idB, 0) && midRun(t, root, idB, 1) }, diag)
	cl.Output(t, "scancel", job+"_0")
	cl.Output(t, "scancel", "--batch", "--signal=TERM", job+"_1")

	// (c): the task requeues itself and finishes its run.
	waitOr(t, 3*time.Minute, "member 1 of b to finish after requeueing", func() bool {
		r := memberRun(t, root, idB, 1)
		return r.EffectiveStatus() == runs.StatusFinished
	}, diag)
	if logs := slurmOutputs(t, root, idB); !strings.Contains(logs, "requeueing array task "+job+"_1;") || strings.Contains(logs, "requeueing array task "+job+"_0") {
		t.Errorf("(c) requeue messages in the task output:\n%s", logs)
	}
	// (b): the cancelled task stays cancelled; resume resubmits it alone.
	st = waitStatus(idB, "2 members: 1 finished, 0 running, 0 pending, 1 failed", time.Minute)
	if !regexp.MustCompile(`(?m)^0\s+selmix\s+1\s+\S+\s+stopped\s+CANCELLED\s`).MatchString(st) {
		t.Errorf("(b) status after scancel:\n%s", st)
	}
	out, code = selmixtest.Code(t, env, "sweep", "resume", idB, "--runs", root)
	if code != 0 || !strings.Contains(out, "resuming 1 members: 0 (stopped)") || !regexp.MustCompile(`array 0%2 \(1 members\)`).MatchString(out) {
		t.Fatalf("(b) sweep resume: exit %d\n%s", code, out)
	}
	waitStatus(idB, "2 members: 2 finished, 0 running, 0 pending, 0 failed", 3*time.Minute)
	t.Logf("(b, c) cancel, preemption warning, requeue and resume in %.1fs", time.Since(t0).Seconds())

	// Both finish exactly as the uninterrupted runs of the same members
	// in (a): policy selmix and uniform, seed 1 are (a)'s members 0 and 2.
	for _, c := range []struct {
		name string
		b, a int
	}{{"(b) scancel + sweep resume", 0, 0}, {"(c) preemption warning + requeue", 1, 2}} {
		got, want := memberRun(t, root, idB, c.b), memberRun(t, root, idA, c.a)
		if n := sessions(t, got); n != 2 {
			t.Errorf("%s: %d sessions, want 2 (interrupted once)", c.name, n)
		}
		runstest.SameOutcome(t, c.name, runstest.ReadOutcome(t, root, got.Meta.ID), runstest.ReadOutcome(t, root, want.Meta.ID))
	}

	// (d) A population on Slurm: this process keeps the schedule, each
	// member's run to a generation's end is a job, a copy's job makes its
	// fork; the copy replays identical.
	t0 = time.Now()
	specD := writeSpec(t, dir, "d.toml", "name = \"popD\"\n[base]\n\"finetune.steps\" = 100\n\"finetune.refresh\" = 25\n\"record.plots\" = false\n"+
		"[axes]\n\"finetune.s\" = [1, 4]\n[pbt]\ninterval = 50\n[slurm]\nmax_parallel = 2\n")
	out, code = selmixtest.Code(t, env, "sweep", specD, "--search", "pbt", "--runs", root)
	m = sweepIDRe.FindStringSubmatch(out)
	if code != 0 || m == nil || !strings.Contains(out, ": population complete: 4 reports, 1 exploits, 0 stopped, 0 failed") || !strings.Contains(out, "submitted: Slurm job ") {
		t.Fatalf("(d) sweep --search pbt on Slurm: exit %d\n%s\nslurm output: %s", code, out, func() string {
			if m == nil {
				return ""
			}
			return slurmOutputs(t, root, m[1])
		}())
	}
	sd, err := sweep.Open(root, m[1])
	if err != nil {
		t.Fatal(err)
	}
	po, err := sd.Population()
	if err != nil {
		t.Fatal(err)
	}
	for i := range sd.Members {
		if po.Exploited(i) == nil {
			continue
		}
		r := memberRun(t, root, m[1], i)
		if rep, code := selmixtest.Code(t, env, "replay", "--runs", root, r.Meta.ID); code != 0 || !strings.Contains(rep, " is identical to "+r.Meta.ID) {
			t.Errorf("(d) replay of the copy %s: exit %d\n%s", r.Meta.ID, code, rep)
		}
	}
	t.Logf("(d) a population of 2 on Slurm in %.1fs", time.Since(t0).Seconds())

	// (e) Successive halving on Slurm, the same way: each run to a rung a
	// job, the promoted member's next job resuming it.
	t0 = time.Now()
	specE := writeSpec(t, dir, "e.toml", "name = \"ashE\"\n[base]\n\"finetune.steps\" = 150\n\"finetune.refresh\" = 25\n\"record.plots\" = false\n"+
		"[axes]\nseed = [1, 2, 3]\n[asha]\nmin_steps = 50\n[slurm]\nmax_parallel = 3\n")
	out, code = selmixtest.Code(t, env, "sweep", specE, "--search", "asha", "--runs", root)
	// Rungs at 50 and 150: three reach 50, the best goes on to the end.
	if code != 0 || !strings.Contains(out, ": schedule complete: 4 reports, 0 stopped, 0 failed") || strings.Count(out, "submitted: Slurm job ") != 4 {
		t.Fatalf("(e) sweep --search asha on Slurm: exit %d\n%s", code, out)
	}
	t.Logf("(e) successive halving of 3 on Slurm in %.1fs", time.Since(t0).Seconds())
}

// slurmOutputs is every task output file of a sweep, for failure messages.
func slurmOutputs(t *testing.T, root, id string) string {
	files, _ := filepath.Glob(filepath.Join(root, "sweeps", id, "slurm", "*.out"))
	var b strings.Builder
	for _, f := range files {
		data, _ := os.ReadFile(f)
		b.WriteString("== " + filepath.Base(f) + "\n" + string(data))
	}
	return b.String()
}

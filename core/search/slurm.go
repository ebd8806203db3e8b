package search

import (
	"fmt"
	"strconv"
	"strings"
)

// ArraySpec is sbatch's --array for the given members (sorted), with the
// spec's throttle: "0-5%2", "1,4,7-9".
func ArraySpec(members []int, maxParallel int) string {
	var parts []string
	for i := 0; i < len(members); {
		j := i
		for j+1 < len(members) && members[j+1] == members[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(members[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", members[i], members[j]))
		}
		i = j + 1
	}
	a := strings.Join(parts, ",")
	if maxParallel > 0 {
		a += "%" + strconv.Itoa(maxParallel)
	}
	return a
}

// Batch is what a sweep's sbatch script is written from.
type Batch struct {
	ID      string // the sweep's id: the job's name
	Dir     string // the sweep folder, absolute
	Workdir string // where members run
	Members int
	Slurm   *Slurm // the spec's [slurm] table; nil: none
	Binary  string // the selmix executable the tasks run
	// Output is the tasks' output files, with sbatch's %A and %a.
	Output string
}

// BatchScript is the sbatch script of a sweep: one array task per
// member (task id = member index), each running the member entry point of
// the selmix binary at path binary with the shared runs root. The batch
// shell forwards SIGTERM and SIGINT to selmix, which checkpoints and exits
// with 143 or 130; with requeue, a task whose selmix exits 143 while the
// task still runs (the warning of --signal=B:TERM@S, or a preemption
// notice — not scancel, which leaves the task COMPLETING) requeues its own
// array task, and the requeued task resumes the run.
func BatchScript(s Batch) (string, error) {
	binary := s.Binary
	for _, p := range []struct{ what, path string }{{"the sweep folder", s.Dir}, {"the working directory", s.Workdir}} {
		if strings.ContainsAny(p.path, " \t\r\n\"'\\#%") {
			return "", fmt.Errorf("slurm: %s %q has white space, a quote, '#' or '%%', which #SBATCH lines cannot carry; use a runs root and working directory without them", p.what, p.path)
		}
	}
	sl := s.Slurm
	if sl == nil {
		sl = &Slurm{}
	}
	all := make([]int, s.Members)
	for i := range all {
		all[i] = i
	}
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	p("#!/bin/bash")
	p("# selmix sweep %s: one array task per member, task id = member index.", s.ID)
	p("# Written by `selmix sweep`; `selmix sweep resume %s` resubmits the members", s.ID)
	p("# that did not finish (sbatch's --array on its command line wins over this one).")
	p("#SBATCH --job-name=%s", s.ID)
	p("#SBATCH --array=%s", ArraySpec(all, sl.MaxParallel))
	p("#SBATCH --output=%s", s.Output)
	p("#SBATCH --open-mode=append")
	p("#SBATCH --chdir=%s", s.Workdir)
	opt := func(name, v string) {
		if v != "" {
			p("#SBATCH --%s=%s", name, v)
		}
	}
	opt("partition", sl.Partition)
	opt("time", sl.Time)
	opt("gres", sl.Gres)
	if sl.CPUsPerTask > 0 {
		opt("cpus-per-task", strconv.Itoa(sl.CPUsPerTask))
	}
	opt("mem", sl.Mem)
	if sl.SignalSeconds > 0 {
		opt("signal", fmt.Sprintf("B:TERM@%d", sl.SignalSeconds))
	}
	if sl.Requeue {
		p("#SBATCH --requeue")
	}
	for _, e := range sl.Extra {
		p("#SBATCH %s", e)
	}
	p("")
	p("# BLAS and Go threads: the CPUs Slurm gave the task.")
	p(`export OPENBLAS_NUM_THREADS="${SLURM_CPUS_PER_TASK:-1}" GOMAXPROCS="${SLURM_CPUS_PER_TASK:-1}"`)
	p("")
	p("# Slurm's TERM (scancel, the --signal warning) reaches this shell; selmix")
	p("# stops cleanly on it: checkpoint, exit 143.")
	p(`pid= sig=`)
	p(`trap 'sig=TERM; [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null' TERM`)
	p(`trap 'sig=INT; [ -n "$pid" ] && kill -INT "$pid" 2>/dev/null' INT`)
	p("%s sweep member %s \"$SLURM_ARRAY_TASK_ID\" \"$@\" &", shellQuote(binary), shellQuote(s.Dir))
	p(`pid=$!`)
	p(`[ -n "$sig" ] && kill -"$sig" "$pid" 2>/dev/null`)
	p(`while kill -0 "$pid" 2>/dev/null; do wait "$pid"; done`)
	p(`wait "$pid"; code=$?`)
	if sl.Requeue {
		p(`# This array task, never the whole array (nor, by the array's job id,`)
		p(`# all its tasks).`)
		p(`task="${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"`)
		p(`if [ "$code" -eq 143 ] && [ "$(squeue --noheader --jobs="$task" --format=%%T 2>/dev/null)" = RUNNING ]; then`)
		p(`  # Told to stop while still running: a preemption warning. Requeue the`)
		p(`  # task; it resumes the run.`)
		p(`  echo "selmix sweep: requeueing array task $task; it resumes from its checkpoint"`)
		p(`  scontrol requeue "$task" && exit 0`)
		p(`fi`)
	}
	p(`exit "$code"`)
	return b.String(), nil
}

// shellQuote quotes s for bash.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// GresGPUs is the GPUs per task a gres asks for: "gpu:2" and
// "gpu:a100:2" ask for 2, "gpu" and "gpu:a100" for 1; ok is false when
// no entry of it (they are comma-separated) is a GPU's.
func GresGPUs(gres string) (n int, ok bool) {
	for _, e := range strings.Split(gres, ",") {
		f := strings.Split(strings.TrimSpace(e), ":")
		if f[0] != "gpu" {
			continue
		}
		n = 1
		if len(f) > 1 {
			if c, err := strconv.Atoi(f[len(f)-1]); err == nil {
				n = c
			}
		}
		return n, true
	}
	return 0, false
}

package sweepexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	"selmix/runs/sweep"
)

// Commands is the sweep.Cluster of the Slurm command-line tools.
type Commands struct{}

// Submit runs `sbatch --parsable --array=ARRAY SCRIPT ARGS…`.
func (Commands) Submit(ctx context.Context, script, array string, args ...string) (string, error) {
	out, err := run(ctx, "sbatch", append([]string{"--parsable", "--array=" + array, script}, args...)...)
	if err != nil {
		return "", err
	}
	// --parsable prints "jobid" or "jobid;cluster".
	id, _, _ := strings.Cut(strings.TrimSpace(out), ";")
	if _, err := strconv.Atoi(id); err != nil {
		return "", fmt.Errorf("sbatch printed %q, not a job id", strings.TrimSpace(out))
	}
	return id, nil
}

// Tasks asks squeue, which knows the jobs the controller still holds
// (running, queued, and for MinJobAge seconds the ended ones), by job
// name, then sacct for the sweep's jobs squeue no longer knows, when the
// cluster keeps accounting.
func (Commands) Tasks(ctx context.Context, s *sweep.Sweep) (map[int]string, error) {
	out, err := run(ctx, "squeue", "--noheader", "--array", "--states=all", "--name="+s.ID, "--format=%F|%K|%T")
	if err != nil {
		return nil, err
	}
	tasks := parseTasks(out, len(s.Members))
	var unknown []string
	for _, j := range s.Jobs {
		if _, ok := tasks.jobs[j.ID]; !ok {
			unknown = append(unknown, j.ID)
		}
	}
	if len(unknown) > 0 {
		// Without accounting (no slurmdbd) sacct fails: what squeue knew
		// and the run store then decide.
		if out, err := run(ctx, "sacct", "--noheader", "--parsable2", "--allocations", "--jobs="+strings.Join(unknown, ","), "--format=JobID,State"); err == nil {
			more := parseTasks(sacctLines(out), len(s.Members))
			for i, t := range more.latest {
				if cur, ok := tasks.latest[i]; !ok || cur.job < t.job {
					tasks.latest[i] = t
				}
			}
		}
	}
	res := map[int]string{}
	for i, t := range tasks.latest {
		res[i] = t.state
	}
	return res, nil
}

type task struct {
	job   int
	state string
}

type taskSet struct {
	latest map[int]task    // by member index
	jobs   map[string]bool // array job ids seen
}

// parseTasks reads "ARRAYJOB|TASK|STATE" lines; of several tasks of one
// member (a resubmission), the latest job's counts.
func parseTasks(out string, n int) taskSet {
	ts := taskSet{latest: map[int]task{}, jobs: map[string]bool{}}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 3 {
			continue
		}
		job, err1 := strconv.Atoi(f[0])
		idx, err2 := strconv.Atoi(f[1])
		if err1 != nil || err2 != nil || idx < 0 || idx >= n {
			continue // a range of tasks not yet split off ("[3-5%2]"), or not ours
		}
		ts.jobs[f[0]] = true
		state, _, _ := strings.Cut(f[2], " ") // "CANCELLED by 0"
		if cur, ok := ts.latest[idx]; !ok || cur.job <= job {
			ts.latest[idx] = task{job, state}
		}
	}
	return ts
}

// sacctLines turns sacct's "JOB_TASK|STATE" into parseTasks' form.
func sacctLines(out string) string {
	var b strings.Builder
	for _, line := range strings.Split(out, "\n") {
		id, state, ok := strings.Cut(strings.TrimSpace(line), "|")
		job, idx, ok2 := strings.Cut(id, "_")
		if ok && ok2 {
			fmt.Fprintf(&b, "%s|%s|%s\n", job, idx, state)
		}
	}
	return b.String()
}

func run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		// One line: Slurm's tools print one "name: error: ..." line each.
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
			if l = strings.TrimSpace(strings.TrimPrefix(l, name+": ")); l != "" {
				lines = append(lines, l)
			}
		}
		msg := strings.Join(lines, "; ")
		if msg == "" {
			msg = err.Error()
		}
		if errors.Is(err, exec.ErrNotFound) {
			msg = "not found (is this a Slurm login node?)"
		}
		return "", fmt.Errorf("%s: %s", name, msg)
	}
	return out.String(), nil
}

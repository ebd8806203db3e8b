package sweepexec

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"selmix/core/search"
	"selmix/runs/sweep"
)

// memberRunner runs a member to a step (0: its end) and says how it
// ended; it passes a signal on to what it runs. The local executor runs
// processes here; on Slurm each run to a stop is a job.
type memberRunner interface {
	runTo(quit chan struct{}, i, stopAt int) jobEnd
	forward(sig os.Signal)
}

// slurmRunner runs members of a search on Slurm: each run to a rung or a
// generation's end is a one-task array job of the sweep's batch script
// with --stop-at (docs/sweeps.md, "On Slurm"), polled until it ends. The
// schedule lives in the process that runs it (where selmix sweep runs);
// a member's job outlives it, and a scheduler resumed later waits for a
// job still queued or running rather than submitting it again.
type slurmRunner struct {
	s      *sweep.Sweep
	cl     sweep.Cluster
	binary string
	poll   time.Duration
	out    func(i int, what string)
	mu     sync.Mutex // one submission (and save of sweep.json) at a time
}

func (r *slurmRunner) state(i int) (string, error) {
	tasks, err := r.cl.Tasks(context.Background(), r.s)
	if err != nil {
		return "", err
	}
	return tasks[i], nil
}

func (r *slurmRunner) runTo(quit chan struct{}, i, stopAt int) jobEnd {
	t0 := time.Now()
	st, err := r.state(i)
	if err != nil {
		return jobEnd{err: err}
	}
	if k := sweep.SlurmClass(st); k != sweep.SlurmQueued && k != sweep.SlurmRunning {
		var args []string
		if stopAt > 0 {
			args = []string{"--stop-at", strconv.Itoa(stopAt)}
		}
		r.mu.Lock()
		job, err := r.s.SubmitHeld(context.Background(), r.cl, r.binary, []int{i}, args...)
		r.mu.Unlock()
		if err != nil {
			return jobEnd{err: err}
		}
		r.out(i, fmt.Sprintf("submitted: Slurm job %s", job.ID))
	} else {
		r.out(i, fmt.Sprintf("waits for its Slurm task (%s)", st))
	}
	fails := 0
	for {
		select {
		case <-quit:
			return jobEnd{skipped: true}
		case <-time.After(r.poll):
		}
		st, err := r.state(i)
		if err != nil {
			if fails++; fails > 30 {
				return jobEnd{err: err}
			}
			continue
		}
		if sweep.SlurmClass(st) != sweep.SlurmEnded {
			continue // not yet listed, queued or running
		}
		switch st {
		case "COMPLETED":
			return jobEnd{code: 0, secs: time.Since(t0).Seconds()}
		case "CANCELLED", "PREEMPTED", "TIMEOUT", "NODE_FAIL", "DEADLINE":
			// Ended from outside: the run stopped cleanly, resumable.
			return jobEnd{code: 143, secs: time.Since(t0).Seconds()}
		}
		return jobEnd{code: 1, secs: time.Since(t0).Seconds()}
	}
}

// forward leaves the members' jobs alone: each stops at its step, and
// sweep resume takes them up.
func (r *slurmRunner) forward(os.Signal) {}

// slurmPoll is how often a search on Slurm asks for its members' tasks.
var slurmPoll = 2 * time.Second

// searchRunner is how a search (ASHA, PBT) runs e's members: processes
// here (e.local), or on Slurm one job per run to a stop, as many at once
// as the spec's max_parallel allows (all, without), the schedule kept by
// this process. SIGINT and SIGTERM reach o.Signals until stop.
func (e Execution) searchRunner(s *sweep.Sweep) (o LocalOptions, r memberRunner, stop func()) {
	if e.Executor != search.ExecSlurm {
		o, stop = e.local(s, len(s.Members))
		return o, &localExec{s: s, o: o, res: &LocalResult{}, running: map[int]*exec.Cmd{}}, stop
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	o = LocalOptions{Binary: e.Binary, Parallel: len(s.Members), Threads: 1, Out: e.Out, Signals: sigs}
	if s.Slurm != nil && s.Slurm.MaxParallel > 0 {
		o.Parallel = s.Slurm.MaxParallel
	}
	fmt.Fprintf(e.Out, "slurm: each member's run to its next stop is a job of %s (%d at once); this process keeps the schedule: after Ctrl-C the jobs run to their stop, and sweep resume goes on\n", s.ScriptPath(), o.Parallel)
	return o, &slurmRunner{s: s, cl: Commands{}, binary: e.Binary, poll: slurmPoll}, func() { signal.Stop(sigs) }
}

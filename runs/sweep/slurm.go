package sweep

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"selmix/core/search"
	"selmix/runs"
)

// Cluster is the part of Slurm a sweep uses.
type Cluster interface {
	// Submit submits the batch script for the array tasks in array
	// (sbatch's --array syntax), with args after the script (its member
	// command's: --stop-at N), and returns the job id.
	Submit(ctx context.Context, script, array string, args ...string) (string, error)
	// Tasks returns the state of each member's latest array task
	// (PENDING, RUNNING, COMPLETED, CANCELLED, ...); members Slurm does
	// not know are absent.
	Tasks(ctx context.Context, s *Sweep) (map[int]string, error)
}

// Slurm task states, by what they mean for a member.
type SlurmKind int

const (
	SlurmUnknown SlurmKind = iota
	SlurmQueued            // waiting to run, requeued, held
	SlurmRunning           // its batch script runs (or ends)
	SlurmEnded             // the task ended, one way or another
)

// SlurmClass is what a Slurm task state means for a member.
func SlurmClass(state string) SlurmKind {
	switch state {
	case "":
		return SlurmUnknown
	case "PENDING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "RESV_DEL_HOLD", "SPECIAL_EXIT":
		return SlurmQueued
	case "RUNNING", "COMPLETING", "CONFIGURING", "RESIZING", "SIGNALING", "STAGE_OUT", "SUSPENDED", "STOPPED":
		return SlurmRunning
	}
	return SlurmEnded // COMPLETED, CANCELLED, FAILED, TIMEOUT, PREEMPTED, NODE_FAIL, OUT_OF_MEMORY, ...
}

// ScriptPath is the sweep's batch script.
func (s *Sweep) ScriptPath() string { return filepath.Join(s.Dir, Script) }

// BatchScript is the sweep's sbatch script (search.BatchScript), the
// tasks' output in its slurm/ folder.
func (s *Sweep) BatchScript(binary string) (string, error) {
	return search.BatchScript(search.Batch{ID: s.ID, Dir: s.Dir, Workdir: s.Workdir, Members: len(s.Members), Slurm: s.Slurm,
		Binary: binary, Output: filepath.Join(s.Dir, slurmDir, "%A_%a.out")})
}

// Submit writes the batch script and submits the given members as one
// array job, recording it in sweep.json. binary is the selmix executable
// the tasks run. It takes the sweep's lock while it works.
func (s *Sweep) Submit(ctx context.Context, cl Cluster, binary string, members []int, args ...string) (Job, error) {
	lock, err := s.Lock()
	if err != nil {
		return Job{}, err
	}
	defer lock.Close()
	return s.SubmitHeld(ctx, cl, binary, members, args...)
}

// SubmitHeld is Submit by the process that holds the sweep's lock (the
// scheduler of a search on Slurm), one call at a time.
func (s *Sweep) SubmitHeld(ctx context.Context, cl Cluster, binary string, members []int, args ...string) (Job, error) {
	script, err := s.BatchScript(binary)
	if err != nil {
		return Job{}, err
	}
	if err := os.MkdirAll(filepath.Join(s.Dir, slurmDir), 0o755); err != nil {
		return Job{}, err
	}
	if err := runs.WriteFile(s.ScriptPath(), []byte(script), 0o755); err != nil {
		return Job{}, err
	}
	members = slices.Clone(members)
	slices.Sort(members)
	throttle := 0
	if s.Slurm != nil {
		throttle = s.Slurm.MaxParallel
	}
	array := search.ArraySpec(members, throttle)
	id, err := cl.Submit(ctx, s.ScriptPath(), array, args...)
	if err != nil {
		return Job{}, err
	}
	j := Job{ID: id, Array: array, Submitted: time.Now().Format(time.RFC3339)}
	s.Jobs = append(s.Jobs, j)
	s.Executor = search.ExecSlurm
	if err := s.Save(); err != nil {
		return j, fmt.Errorf("job %s submitted, but recording it failed: %w", id, err)
	}
	return j, nil
}

// SetGPUsPerTask makes every array task ask Slurm for n GPUs (Slurm then
// binds them and sets CUDA_VISIBLE_DEVICES itself): a gres of "gpu:n"
// where the spec gives no gres, added to one that asks for no GPU, and
// one that asks for n already is kept as it is. A gres asking for another
// number of GPUs is an error naming opt (--gpus-per-member) and the spec.
func (s *Sweep) SetGPUsPerTask(opt string, n int) error {
	if s.Slurm == nil {
		s.Slurm = &search.Slurm{}
	}
	switch got, ok := search.GresGPUs(s.Slurm.Gres); {
	case ok && got != n:
		return fmt.Errorf("%s %d: the spec's [slurm] gres %q asks for %d GPU(s) per task; give one of the two, or the same number", opt, n, s.Slurm.Gres, got)
	case ok:
	case s.Slurm.Gres == "":
		s.Slurm.Gres = fmt.Sprintf("gpu:%d", n)
	default:
		s.Slurm.Gres += fmt.Sprintf(",gpu:%d", n)
	}
	return nil
}

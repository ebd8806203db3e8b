package app

import (
	"context"
	"errors"
	"strings"

	"selmix/app/sweepexec"
	"selmix/core/gpu"
	"selmix/core/search"
	"selmix/runs/sweep"
)

// GPU placement (docs/sweeps.md, README "GPU boxes"): a local sweep's
// members each get GPUs of their own (gpu.Placement, handed to the
// executor as its sweepexec.Placer); a single run's worker gets the GPUs
// --gpus names.

// GPUEnv is the environment a run's worker gets from --gpus mode on run
// and tui (gpu.Visible): CUDA_VISIBLE_DEVICES set to the list, checked
// against the box, or to "" for none; nothing for auto or "". Bad input
// is a UsageError naming --gpus.
func GPUEnv(ctx context.Context, mode string) ([]string, error) {
	env, err := gpu.Visible(ctx, mode)
	return env, gpuErr(err)
}

// gpuErr makes what a person got wrong (gpu.BadOption) bad input.
func gpuErr(err error) error {
	if errors.As(err, new(*gpu.BadOption)) {
		return UsageError{err}
	}
	return err
}

// placement resolves o's GPU options for members of s run by o.Executor:
// locally the GPUs each member gets (nil placer with none to place and
// the environment left as it is); on Slurm the GPUs each array task asks
// for (--gpus-per-member into the gres), Slurm binding them itself, so
// --gpus other than auto is bad input there. Messages call the values as
// n does (gpu.Options, or sweep.json's fields on resume).
func placement(ctx context.Context, s *sweep.Sweep, o SweepOptions, given bool, n gpu.Names) (sweepexec.Placer, error) {
	if o.Executor == search.ExecSlurm {
		if given && o.GPUs != "" && o.GPUs != gpu.Auto {
			return nil, BadInput("%s %s: Slurm binds each task's GPUs itself (its gres); on Slurm use %s N or the spec's [slurm] gres", gpu.OptGPUs, echo(o.GPUs), gpu.OptPer)
		}
		if o.GPUsPerMember > 0 {
			if err := s.SetGPUsPerTask(n.Per, o.GPUsPerMember); err != nil {
				return nil, UsageError{err}
			}
		}
		return nil, nil
	}
	p, err := gpu.PlanAs(ctx, o.GPUs, o.GPUsPerMember, n)
	if err != nil {
		return nil, gpuErr(err)
	}
	// With no GPUs to place, p still says so (Describe) where the sweep
	// starts and in --dry-run; it places nothing.
	return p, nil
}

// Where resume's GPU values come from when not given again.
const (
	sweepGPUs = "sweep.json's gpus"
	sweepPer  = "sweep.json's gpus_per_member"
)

// maxEcho bounds the bytes of a value a message repeats.
const maxEcho = 64

// echo is v for a message: at most maxEcho bytes, "…" when cut.
func echo(v string) string {
	if len(v) > maxEcho {
		return strings.ToValidUTF8(v[:maxEcho], "") + "…"
	}
	return v
}

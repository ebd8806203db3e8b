package app

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"selmix/core/search"
	"selmix/core/train"
	"selmix/runs"
	"selmix/runs/record"
	"selmix/runs/sweep"
)

// A resumed run records its session's GPUs and world size, and says in
// one line when the world size is not the one it was saved with.
func TestRecordGPUs(t *testing.T) {
	root := t.TempDir()
	rec, err := record.New(root, "r", "", record.Options{}, runs.Meta{GPUs: []string{"0"}})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close(false)
	was := rec.Writer().Meta()
	for _, c := range []struct {
		in   train.Info
		line string
		gpus []string
		ws   int
	}{
		{train.Info{GPUs: []string{"0"}, WorldSize: 1}, "", []string{"0"}, 0},
		{train.Info{GPUs: []string{"2", "3"}, WorldSize: 2}, "world size 2, was 1 when the run was saved: resuming with 2 ranks\n", []string{"2", "3"}, 2},
		{train.Info{}, "world size 1, was 2 when the run was saved: resuming with 1 rank\n", nil, 0},
	} {
		var b bytes.Buffer
		if err := recordSession(&b, rec, was, c.in); err != nil {
			t.Fatal(err)
		}
		r, err := runs.Open(root, was.ID)
		if err != nil {
			t.Fatal(err)
		}
		if b.String() != c.line || !slices.Equal(r.Meta.GPUs, c.gpus) || r.Meta.WorldSize != c.ws {
			t.Errorf("%+v: said %q, run.json gpus %q world size %d; want %q, %q, %d", c.in, b.String(), r.Meta.GPUs, r.Meta.WorldSize, c.line, c.gpus, c.ws)
		}
		was = r.Meta
	}
}

// standIn puts a stand-in nvidia-smi listing four GPUs first on PATH and
// unsets CUDA_VISIBLE_DEVICES.
func standIn(t *testing.T) {
	t.Helper()
	bin := t.TempDir()
	script := "#!/bin/sh\nprintf '0, GPU-a0\\n1, GPU-a1\\n2, GPU-a2\\n3, GPU-a3\\n'\n"
	if err := os.WriteFile(filepath.Join(bin, "nvidia-smi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	t.Setenv("CUDA_VISIBLE_DEVICES", "")
	os.Unsetenv("CUDA_VISIBLE_DEVICES")
}

const gpuSweepSpec = `name = "g"
[base]
"finetune.steps" = 10
[axes]
seed = [1, 2, 3]
`

// A sweep records --gpus and --gpus-per-member; resume places its members
// as they say unless given again; on Slurm --gpus-per-member is the
// gres, and --gpus is refused.
func TestSweepGPUOptions(t *testing.T) {
	standIn(t)
	ctx := context.Background()
	root, path, s := gpuSweep(t, "2,3", 1)
	var b bytes.Buffer
	if err := ResumeSweep(ctx, &b, root, s.ID, SweepOptions{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if want := "\nGPUs: GPUs 2, 3 (nvidia-smi), 1 per member: 2 at a time, each with its own\n"; !strings.Contains(b.String(), want) {
		t.Errorf("resume with the recorded options lacks %q:\n%s", want, b.String())
	}
	b.Reset()
	if err := ResumeSweep(ctx, &b, root, s.ID, SweepOptions{DryRun: true, GPUs: "auto", GPUsPerMember: 2}); err != nil {
		t.Fatal(err)
	}
	if want := "\nGPUs: GPUs 0, 1, 2, 3 (nvidia-smi), 2 per member: 2 at a time, each with its own\n"; !strings.Contains(b.String(), want) {
		t.Errorf("resume with options given again lacks %q:\n%s", want, b.String())
	}
	err := ResumeSweep(ctx, &b, root, s.ID, SweepOptions{DryRun: true, GPUs: "9"})
	if !errors.As(err, new(UsageError)) || err.Error() != "--gpus 9: no GPU 9 on this box; it has 0, 1, 2, 3 (nvidia-smi)" {
		t.Errorf("resume --gpus 9: %v", err)
	}

	b.Reset()
	if err := StartSweep(ctx, &b, root, path, SweepOptions{Executor: search.ExecSlurm, GPUsPerMember: 2, DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\n#SBATCH --gres=gpu:2\n") {
		t.Errorf("slurm dry run with --gpus-per-member 2 lacks its gres:\n%s", b.String())
	}
	err = StartSweep(ctx, &b, root, path, SweepOptions{Executor: search.ExecSlurm, GPUs: "0", DryRun: true})
	if !errors.As(err, new(UsageError)) || !strings.HasPrefix(err.Error(), "--gpus 0: Slurm binds each task's GPUs itself") {
		t.Errorf("slurm --gpus 0: %v", err)
	}
}

// A bad GPU value resume reads from sweep.json (hand-edited, or a GPU the
// box no longer has) is named as sweep.json's field, not as an option the
// person did not give.
func TestSweepResumeNamesSweepJSON(t *testing.T) {
	standIn(t)
	ctx := context.Background()
	root, _, s := gpuSweep(t, "7", 1)
	var b bytes.Buffer
	err := ResumeSweep(ctx, &b, root, s.ID, SweepOptions{DryRun: true})
	want := "sweep.json's gpus 7: no GPU 7 on this box; it has 0, 1, 2, 3 (nvidia-smi) (give --gpus or --gpus-per-member to place the members otherwise)"
	if !errors.As(err, new(UsageError)) || err.Error() != want {
		t.Errorf("resume with gpus 7 in sweep.json: %v, want %q", err, want)
	}
	// Given again, the option is what is named.
	err = ResumeSweep(ctx, &b, root, s.ID, SweepOptions{DryRun: true, GPUs: "auto", GPUsPerMember: 5})
	if want := "--gpus-per-member 5: more GPUs than the 4 this box has (0, 1, 2, 3)"; !errors.As(err, new(UsageError)) || err.Error() != want {
		t.Errorf("resume --gpus-per-member 5: %v, want %q", err, want)
	}
	s.GPUs, s.GPUsPerMember = "0,1", -2
	if err := s.Save(); err != nil {
		t.Fatal(err)
	}
	err = ResumeSweep(ctx, &b, root, s.ID, SweepOptions{DryRun: true})
	if want := "sweep.json's gpus_per_member -2: want ≥ 1"; !errors.As(err, new(UsageError)) || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("resume with gpus_per_member -2 in sweep.json: %v, want it to start %q", err, want)
	}
}

// On a box without GPUs, --gpus auto says so where the sweep starts and in
// --dry-run (issue 46: it said nothing).
func TestSweepNoGPUsSaysSo(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no nvidia-smi
	t.Setenv("CUDA_VISIBLE_DEVICES", "")
	os.Unsetenv("CUDA_VISIBLE_DEVICES")
	root, _, s := gpuSweep(t, "", 0)
	var b bytes.Buffer
	if err := ResumeSweep(context.Background(), &b, root, s.ID, SweepOptions{DryRun: true, GPUs: "auto"}); err != nil {
		t.Fatal(err)
	}
	if want := "\nGPUs: no GPUs found (CUDA_VISIBLE_DEVICES unset and no nvidia-smi): members run on the CPU"; !strings.Contains(b.String(), want) {
		t.Errorf("--dry-run --gpus auto without GPUs lacks %q:\n%s", want, b.String())
	}
	if strings.Contains(b.String(), "CUDA_VISIBLE_DEVICES=") {
		t.Errorf("members without GPUs get a CUDA_VISIBLE_DEVICES:\n%s", b.String())
	}
}

// gpuSweep creates a local sweep of gpuSweepSpec that records gpus and
// per, and returns its runs root, its spec's path and the sweep.
func gpuSweep(t *testing.T, gpus string, per int) (root, path string, s *sweep.Sweep) {
	t.Helper()
	dir := t.TempDir()
	root, path = filepath.Join(dir, "runs"), filepath.Join(dir, "g.toml")
	if err := os.WriteFile(path, []byte(gpuSweepSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, text, err := search.ReadSpec(path)
	if err != nil {
		t.Fatal(err)
	}
	if s, err = sweep.Plan(runs.Root(root), spec, search.ExecLocal, dir); err != nil {
		t.Fatal(err)
	}
	s.GPUs, s.GPUsPerMember = gpus, per
	if err := s.Create(spec, text); err != nil {
		t.Fatal(err)
	}
	return root, path, s
}

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"selmix/cmd/selmix/internal/selmixtest"
	"selmix/core/worker/workertest"
	"selmix/runs"
	"selmix/runs/sweep"
)

// standInSMI is a stand-in nvidia-smi of a box of four GPUs: their
// indices and UUIDs, and their utilisation and memory.
const standInSMI = `#!/bin/sh
case "$1" in
--query-gpu=index,uuid) printf '0, GPU-a0\n1, GPU-a1\n2, GPU-a2\n3, GPU-a3\n' ;;
--query-gpu=index,uuid,utilization.gpu,memory.used,memory.total) printf '0, GPU-a0, 10, 1024, 81920\n1, GPU-a1, 30, 1024, 81920\n2, GPU-a2, 50, 1024, 81920\n3, GPU-a3, 70, 1024, 81920\n' ;;
*) echo "stand-in nvidia-smi: $*" >&2; exit 1 ;;
esac
`

// gpuBox is the environment of a selmix on a stand-in four-GPU box whose
// fake workers record what they see in seen (workertest's gpus mode).
func gpuBox(t *testing.T, seen string) []string {
	t.Helper()
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "nvidia-smi"), []byte(standInSMI), 0o755); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", workertest.Env:
		case "PATH":
			env = append(env, "PATH="+bin+":"+v)
		default:
			env = append(env, kv)
		}
	}
	return append(env, workertest.Env+"=gpus="+seen)
}

// gpuSpec is a sweep of four short runs of the fake worker.
func gpuSpec(t *testing.T, dir string) string {
	return gpuSpecOf(t, dir, "gpus.toml", "[axes]\nseed = [1, 2, 3, 4]\n")
}

// gpuSpecOf is a sweep of short runs of the fake worker whose members (and
// search) members says.
func gpuSpecOf(t *testing.T, dir, name, members string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd, _ := json.Marshal([]string{self})
	wd, _ := json.Marshal(dir)
	return writeSpec(t, dir, name, fmt.Sprintf(`name = "gpus"
[base]
"finetune.steps" = 40
"finetune.refresh" = 10
"finetune.batch" = 16
"record.plots" = false
"worker.command" = %s
"worker.dir" = %s
%s`, cmd, wd, members))
}

// session is one fake worker's session as it recorded it.
type session struct {
	visible    string
	start, end int64
}

// sessions reads what the fake workers recorded, one session per pid.
func readSessions(t *testing.T, path string) []session {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]*session{}
	var order []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 {
			t.Fatalf("seen line %q", line)
		}
		at, _ := strconv.ParseInt(f[2], 10, 64)
		s := by[f[3]]
		if s == nil {
			s = &session{visible: f[0]}
			by[f[3]] = s
			order = append(order, f[3])
		}
		if f[1] == "start" {
			s.start = at
		} else {
			s.end = at
		}
	}
	var out []session
	for _, pid := range order {
		if s := by[pid]; s.start == 0 || s.end == 0 {
			t.Errorf("a worker session lacks its start or end: %+v", *s)
		}
		out = append(out, *by[pid])
	}
	return out
}

// noSharing fails t if two sessions held one GPU at once.
func noSharing(t *testing.T, ss []session) {
	t.Helper()
	byGPU := map[string][]session{}
	for _, s := range ss {
		byGPU[s.visible] = append(byGPU[s.visible], s)
	}
	for g, l := range byGPU {
		sort.Slice(l, func(i, j int) bool { return l[i].start < l[j].start })
		for i := 1; i < len(l); i++ {
			if l[i].start < l[i-1].end {
				t.Errorf("GPU %s: two workers on it at once (%+v and %+v)", g, l[i-1], l[i])
			}
		}
	}
}

var gpuSweepIDRe = regexp.MustCompile(`(?m)^sweep (\S+): 4 members in `)

// A local sweep on a stand-in four-GPU box: each member's worker sees
// exactly one GPU, the four distinct, and run.json and sweep status say
// which; with --gpus 2,3 only those two, never two members on one at
// once; bad --gpus and --gpus-per-member are refused in one line, exit 2,
// before anything is written.
func TestSweepGPUs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root := filepath.Join(dir, "runs")
	spec := gpuSpec(t, dir)

	t.Run("bad input", func(t *testing.T) {
		env := gpuBox(t, filepath.Join(dir, "unused"))
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"--gpus", "7"}, "selmix: --gpus 7: no GPU 7 on this box; it has 0, 1, 2, 3 (nvidia-smi)"},
			{[]string{"--gpus-per-member", "0"}, "selmix: --gpus-per-member 0: want ≥ 1 (GPUs each member gets)"},
			{[]string{"--gpus", "1,,2"}, `selmix: --gpus "1,,2": entry 2 is empty; want GPU ids such as 0,1 (or auto, or none)`},
			{[]string{"--gpus", "0,1", "--gpus-per-member", "3"}, "selmix: --gpus-per-member 3: more GPUs than the 2 --gpus 0,1 gives (0, 1)"},
			{[]string{"--gpus-per-member", "5"}, "selmix: --gpus-per-member 5: more GPUs than the 4 this box has (0, 1, 2, 3)"},
			{[]string{"--executor", "slurm", "--gpus", "0"}, "selmix: --gpus 0: Slurm binds each task's GPUs itself (its gres); on Slurm use --gpus-per-member N or the spec's [slurm] gres"},
		} {
			out, code := selmixtest.Code(t, env, append([]string{"sweep", spec, "--runs", root}, c.args...)...)
			if code != 2 || out != c.want+"\n" {
				t.Errorf("%q: exit %d, output\n%s\nwant exit 2 and the one line %q", c.args, code, out, c.want)
			}
		}
		if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("refused options wrote %s", root)
		}
		out, code := selmixtest.Code(t, env, "sweep", spec, "--runs", root, "--dry-run", "--gpus-per-member", "2")
		if want := "\nGPUs: GPUs 0, 1, 2, 3 (nvidia-smi), 2 per member: 2 at a time, each with its own\n"; code != 0 || !strings.Contains(out, want) {
			t.Errorf("dry run: exit %d, lacks %q:\n%s", code, want, out)
		}
	})

	run := func(t *testing.T, seen string, args ...string) (*sweep.Sweep, []session) {
		t.Helper()
		out, code := selmixtest.Code(t, gpuBox(t, seen), append([]string{"sweep", spec, "--runs", root}, args...)...)
		m := gpuSweepIDRe.FindStringSubmatch(out)
		if code != 0 || m == nil {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		s, err := sweep.Open(root, m[1])
		if err != nil {
			t.Fatal(err)
		}
		t.Log(out)
		ss := readSessions(t, seen)
		if len(ss) != 4 {
			t.Fatalf("%d worker sessions, want 4:\n%s", len(ss), out)
		}
		noSharing(t, ss)
		for i := range s.Members {
			r, err := s.Run(i)
			if err != nil || r == nil {
				t.Fatalf("member %d: run %v, %v", i, r, err)
			}
			if dev := s.Devices(i); len(dev) != 1 || !slices.Equal(r.Meta.GPUs, dev) {
				t.Errorf("member %d: run.json gpus %q, the executor gave it %q", i, r.Meta.GPUs, dev)
			}
		}
		return s, ss
	}

	t.Run("auto", func(t *testing.T) {
		seen := filepath.Join(dir, "seen-auto")
		s, ss := run(t, seen)
		var got []string
		for _, x := range ss {
			got = append(got, x.visible)
		}
		slices.Sort(got)
		if !slices.Equal(got, []string{"0", "1", "2", "3"}) {
			t.Errorf("the workers saw %q, want 0, 1, 2, 3 one each", got)
		}
		st := selmixtest.Run(t, "sweep", "status", s.ID, "--runs", root)
		head, _, _ := strings.Cut(st, "\n")
		if !strings.Contains(head, " GPUS ") {
			t.Errorf("sweep status has no GPUS column:\n%s", st)
		}
	})

	// Searches on GPUs 2 and 3: every run to a stop (a promoted member's,
	// a population's copy's) runs on one of them, never two on one at
	// once.
	for _, c := range []struct{ name, members, search, want string }{
		{"pbt", "[axes]\n\"finetune.s\" = [1, 2, 4, 8]\n[pbt]\ninterval = 20\n", "pbt", ": population complete: 8 reports, 1 exploits, "},
		{"asha", "[axes]\nseed = [1, 2, 3, 4]\n[asha]\nmin_steps = 10\n", "asha", ": schedule complete: 6 reports, "},
	} {
		t.Run(c.name, func(t *testing.T) {
			seen := filepath.Join(dir, "seen-"+c.name)
			spec := gpuSpecOf(t, dir, c.name+".toml", c.members)
			out, code := selmixtest.Code(t, gpuBox(t, seen), "sweep", spec, "--search", c.search, "--runs", root, "--gpus", "2,3")
			if code != 0 || !strings.Contains(out, c.want) {
				t.Fatalf("exit %d:\n%s", code, out)
			}
			ss := readSessions(t, seen)
			// One worker session per run to a stop: per report.
			var n int
			fmt.Sscan(regexp.MustCompile(`: (\d+) reports`).FindStringSubmatch(out)[1], &n)
			if len(ss) != n || n < 6 {
				t.Fatalf("%d worker sessions, %d runs to a stop:\n%s", len(ss), n, out)
			}
			noSharing(t, ss)
			for _, x := range ss {
				if x.visible != "2" && x.visible != "3" {
					t.Errorf("a worker saw %q, want 2 or 3", x.visible)
				}
			}
		})
	}

	t.Run("2,3", func(t *testing.T) {
		seen := filepath.Join(dir, "seen-23")
		s, ss := run(t, seen, "--gpus", "2,3")
		if log, _ := os.ReadFile(s.LogPath(0)); !strings.Contains(string(log), ": CUDA_VISIBLE_DEVICES=") {
			t.Errorf("member 0's log does not say its GPU:\n%s", log)
		}
		for _, x := range ss {
			if x.visible != "2" && x.visible != "3" {
				t.Errorf("a worker saw %q, want 2 or 3", x.visible)
			}
		}
		if s.GPUs != "2,3" {
			t.Errorf("sweep.json records --gpus %q, want 2,3", s.GPUs)
		}
	})
}

// run --gpus LIST sets the worker's CUDA_VISIBLE_DEVICES, checked against
// the box, and run.json records the GPU its hello named.
func TestRunGPUs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root := filepath.Join(dir, "runs")
	seen := filepath.Join(dir, "seen")
	env := gpuBox(t, seen)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--headless", "-q", "--runs", root, "--set", "finetune.steps=20", "--set", "finetune.batch=16", "--set", "record.plots=false"}
	out, code := selmixtest.Code(t, env, append(args, "--gpus", "7", "--worker", "--", self)...)
	if want := "selmix: --gpus 7: no GPU 7 on this box; it has 0, 1, 2, 3 (nvidia-smi)\n"; code != 2 || out != want {
		t.Errorf("--gpus 7: exit %d, %q; want 2, %q", code, out, want)
	}
	out, code = selmixtest.Code(t, env, append(args, "--gpus", "3,1", "--worker", "--", self)...)
	m := selmixtest.RunIDRe.FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	ss := readSessions(t, seen)
	if len(ss) != 1 || ss[0].visible != "3,1" {
		t.Errorf("the worker saw %+v, want CUDA_VISIBLE_DEVICES=3,1", ss)
	}
	r, err := runs.Open(root, m[1])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Meta.GPUs, []string{"3"}) || r.Meta.WorldSize != 0 {
		t.Errorf("run.json: gpus %q, world size %d; want [3] and one rank", r.Meta.GPUs, r.Meta.WorldSize)
	}
}

package gpu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"selmix/core/loop"
)

// fourGPUs is what nvidia-smi --query-gpu=index,uuid --format=csv,noheader
// prints on a box of four GPUs.
const fourGPUs = `0, GPU-11111111-aaaa-bbbb-cccc-000000000000
1, GPU-11111111-aaaa-bbbb-cccc-000000000001
2, GPU-11111111-aaaa-bbbb-cccc-000000000002
3, GPU-11111111-aaaa-bbbb-cccc-000000000003
`

// fakeSMI puts a stand-in nvidia-smi running script (shell builtins and
// absolute paths only) on a PATH of its own and unsets CUDA_VISIBLE_DEVICES; script "" leaves nvidia-smi out.
func fakeSMI(t *testing.T, script string) {
	t.Helper()
	dir := t.TempDir()
	if script != "" {
		if err := os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
	t.Setenv(EnvVisible, "")
	os.Unsetenv(EnvVisible)
	t.Setenv(EnvOrder, "")
	os.Unsetenv(EnvOrder)
}

// boxOf4 is a stand-in nvidia-smi that lists four GPUs.
func boxOf4(t *testing.T) {
	fakeSMI(t, "printf '%s' '"+fourGPUs+"'")
}

func TestParseVisible(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"0,1", []string{"0", "1"}},
		{" 2 , 3 ", []string{"2", "3"}},
		{"", nil},
		{"-1", nil},
		{"0,-1,2", []string{"0"}}, // CUDA stops at the first entry that is no device
		{"GPU-8f2c1a3e-0000, MIG-GPU-8f2c1a3e-0000/1/0", []string{"GPU-8f2c1a3e-0000", "MIG-GPU-8f2c1a3e-0000/1/0"}},
		{"NoDevFiles", nil},
	} {
		if got := ParseVisible(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseVisible(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestParseList(t *testing.T) {
	got, err := ParseList("--gpus", "2, 3,GPU-ab-12")
	if want := []string{"2", "3", "GPU-ab-12"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, %v; want %q", got, err, want)
	}
	for _, c := range []struct{ in, want string }{
		{"1,,2", `--gpus "1,,2": entry 2 is empty`},
		{"1,", `--gpus "1,": entry 2 is empty`},
		{"0,0", `--gpus "0,0": GPU 0 is given twice`},
		{"gpu0", `--gpus "gpu0": "gpu0" is not a GPU id`},
		{"-1", `--gpus "-1": "-1" is not a GPU id`},
	} {
		_, err := ParseList("--gpus", c.in)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseList(%q): got %v, want one line starting %q", c.in, err, c.want)
		}
	}
}

func TestParseSMI(t *testing.T) {
	ids, uuids, err := ParseSMI(fourGPUs)
	if err != nil || !reflect.DeepEqual(ids, []string{"0", "1", "2", "3"}) || uuids[3] != "GPU-11111111-aaaa-bbbb-cccc-000000000003" {
		t.Fatalf("got %q %q %v", ids, uuids, err)
	}
	if _, _, err := ParseSMI("No devices were found\n"); err == nil {
		t.Error("a line that is no \"index, uuid\" was accepted")
	}
}

func groupsOf(p *Placement) string {
	var s []string
	for _, g := range p.Groups {
		s = append(s, strings.Join(g, "+"))
	}
	return strings.Join(s, " ")
}

func TestPlanOnFourGPUs(t *testing.T) {
	boxOf4(t)
	ctx := context.Background()
	for _, c := range []struct {
		mode   string
		per    int
		groups string
		spare  []string
	}{
		{"", 0, "0 1 2 3", nil},
		{"auto", 1, "0 1 2 3", nil},
		{"auto", 2, "0+1 2+3", nil},
		{"auto", 3, "0+1+2", []string{"3"}},
		{"2,3", 0, "2 3", nil},
		{"3,1", 2, "3+1", nil},
		{"GPU-11111111-aaaa-bbbb-cccc-000000000002", 0, "2", nil}, // a UUID names its index
	} {
		p, err := Plan(ctx, c.mode, c.per)
		if err != nil {
			t.Errorf("Plan(%q, %d): %v", c.mode, c.per, err)
			continue
		}
		if g := groupsOf(p); g != c.groups || !reflect.DeepEqual(p.Spare, c.spare) || p.Slots() != len(p.Groups) {
			t.Errorf("Plan(%q, %d): groups %q spare %q, want %q spare %q", c.mode, c.per, g, p.Spare, c.groups, c.spare)
		}
	}
	p, _ := Plan(ctx, "2,3", 0)
	if env := p.Env([]string{"3"}); !reflect.DeepEqual(env, []string{"CUDA_VISIBLE_DEVICES=3", "CUDA_DEVICE_ORDER=PCI_BUS_ID"}) {
		t.Errorf("Env = %q", env)
	}
	if d := p.Describe(); d != "GPUs 2, 3 (nvidia-smi), 1 per member: 2 at a time, each with its own" {
		t.Errorf("Describe = %q", d)
	}
}

// Bad input: each is a *BadOption, one line naming the option.
func TestPlanBadInput(t *testing.T) {
	ctx := context.Background()
	check := func(mode string, per int, want string) {
		t.Helper()
		_, err := Plan(ctx, mode, per)
		var b *BadOption
		if !errors.As(err, &b) || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Plan(%q, %d): got %v, want a BadOption starting %q", mode, per, err, want)
		}
	}
	t.Run("four", func(t *testing.T) {
		boxOf4(t)
		check("7", 0, "--gpus 7: no GPU 7 on this box; it has 0, 1, 2, 3 (nvidia-smi)")
		check("1,,2", 0, `--gpus "1,,2": entry 2 is empty`)
		check("0,x", 0, `--gpus "0,x": "x" is not a GPU id`)
		check("auto", -1, "--gpus-per-member -1: want ≥ 1")
		check("0,1", 3, "--gpus-per-member 3: more GPUs than the 2 --gpus 0,1 gives (0, 1)")
		check("auto", 5, "--gpus-per-member 5: more GPUs than the 4 this box has (0, 1, 2, 3)")
		check("none", 1, "--gpus-per-member 1: no GPUs to place with --gpus none")
		if err := CheckPer(0); err == nil || err.Error() != "--gpus-per-member 0: want ≥ 1 (GPUs each member gets)" {
			t.Errorf("CheckPer(0) = %v", err)
		}
	})
	t.Run("none", func(t *testing.T) {
		fakeSMI(t, "")
		check("0", 0, "--gpus 0: this box has no GPUs")
		check("auto", 2, "--gpus-per-member 2: this box has no GPUs")
	})
}

func TestDiscover(t *testing.T) {
	ctx := context.Background()
	t.Run("no nvidia-smi", func(t *testing.T) {
		fakeSMI(t, "")
		p, err := Plan(ctx, "auto", 0)
		if err != nil || p.Slots() != 0 || p.Env(p.Take()) != nil {
			t.Fatalf("got %+v, %v; want no GPUs and the environment left as it is", p, err)
		}
	})
	t.Run("no driver", func(t *testing.T) {
		fakeSMI(t, "echo 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.'; exit 9")
		b, err := Discover(ctx)
		if err != nil || len(b.IDs) != 0 {
			t.Fatalf("got %+v, %v; want no GPUs", b, err)
		}
	})
	t.Run("hung", func(t *testing.T) {
		fakeSMI(t, "exec /bin/sleep 30")
		defer func(d time.Duration) { Deadline = d }(Deadline)
		Deadline = 200 * time.Millisecond
		start := time.Now()
		_, err := Plan(ctx, "auto", 0)
		if err == nil || !strings.Contains(err.Error(), "nvidia-smi did not answer") {
			t.Fatalf("got %v, want nvidia-smi's deadline", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("a hung nvidia-smi held Plan %v", d)
		}
	})
	t.Run("CUDA_VISIBLE_DEVICES", func(t *testing.T) {
		boxOf4(t)
		t.Setenv(EnvVisible, "2,3")
		p, err := Plan(ctx, "auto", 0)
		if err != nil || groupsOf(p) != "2 3" || p.Box.Source != FromEnv {
			t.Fatalf("got %+v, %v; want the variable's GPUs 2 and 3", p, err)
		}
		if env := p.Env([]string{"2"}); !reflect.DeepEqual(env, []string{"CUDA_VISIBLE_DEVICES=2"}) {
			t.Errorf("Env = %q", env)
		}
		if _, err := Plan(ctx, "0", 0); err == nil || !strings.Contains(err.Error(), "it has 2, 3 (CUDA_VISIBLE_DEVICES)") {
			t.Errorf("--gpus 0 with CUDA_VISIBLE_DEVICES=2,3: %v", err)
		}
		t.Setenv(EnvVisible, "")
		if p, err := Plan(ctx, "auto", 0); err != nil || p.Slots() != 0 {
			t.Errorf("CUDA_VISIBLE_DEVICES=\"\": got %+v, %v; want no GPUs", p, err)
		}
	})
	t.Run("none hides", func(t *testing.T) {
		boxOf4(t)
		p, err := Plan(ctx, "none", 0)
		if err != nil || p.Slots() != 0 || !reflect.DeepEqual(p.Env(p.Take()), []string{"CUDA_VISIBLE_DEVICES="}) {
			t.Fatalf("got %+v, %v", p, err)
		}
	})
}

func TestVisible(t *testing.T) {
	boxOf4(t)
	ctx := context.Background()
	for _, c := range []struct {
		mode string
		want []string
	}{
		{"", nil},
		{"auto", nil},
		{"none", []string{"CUDA_VISIBLE_DEVICES="}},
		{"3,1", []string{"CUDA_VISIBLE_DEVICES=3,1", "CUDA_DEVICE_ORDER=PCI_BUS_ID"}},
	} {
		if got, err := Visible(ctx, c.mode); err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Visible(%q) = %q, %v; want %q", c.mode, got, err, c.want)
		}
	}
	if _, err := Visible(ctx, "4"); err == nil || !strings.HasPrefix(err.Error(), "--gpus 4: no GPU 4") {
		t.Errorf("Visible(4) = %v", err)
	}
}

func TestPool(t *testing.T) {
	boxOf4(t)
	p, err := Plan(context.Background(), "auto", 1)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var took [][]string
	for range 4 {
		g := p.Take()
		if len(g) != 1 || seen[g[0]] {
			t.Fatalf("Take gave %q after %v", g, seen)
		}
		seen[g[0]] = true
		took = append(took, g)
	}
	if p.Held() != 4 {
		t.Fatalf("Held = %d", p.Held())
	}
	mustPanic(t, "a fifth Take", func() { p.Take() })
	p.Put(took[2])
	if g := p.Take(); !reflect.DeepEqual(g, took[2]) {
		t.Fatalf("Take after Put(%q) = %q", took[2], g)
	}
	p.Put(took[0])
	mustPanic(t, "a second Put", func() { p.Put(took[0]) })
	mustPanic(t, "a Put of no group", func() { p.Put([]string{"7"}) })
}

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s did not panic", what)
		}
	}()
	f()
}

func TestStatsFill(t *testing.T) {
	st := ParseStats("0, GPU-a0, 5, 1024, 81920\n1, GPU-a1, [N/A], 2048, 81920\n2, GPU-a2, 93, 41984, 81920\nbad line\n3, GPU-a3, 40, 100, 81920\n")
	if len(st) != 4 || st[2].Util != 0.93 || st[2].MemUsed != 41984<<20 || st[1].Util != 0 {
		t.Fatalf("ParseStats = %+v", st)
	}
	sys := &loop.System{GPUs: []loop.GPU{{ID: "2"}, {ID: "GPU-a3", Util: 0.5, MemTotal: 1 << 30}, {ID: "9"}}}
	if !NeedsFill(sys) {
		t.Fatal("NeedsFill = false")
	}
	Fill(sys, st)
	want := []loop.GPU{{ID: "2", Util: 0.93, MemTotal: 81920 << 20}, {ID: "GPU-a3", Util: 0.5, MemTotal: 1 << 30}, {ID: "9"}}
	if !reflect.DeepEqual(sys.GPUs, want) {
		t.Errorf("Fill: GPUs %+v, want %+v", sys.GPUs, want)
	}
	// The mean of the run's GPUs only (0.93 and 0.5), not the box's.
	if math.Abs(sys.Util-(0.93+0.5)/2) > 1e-12 {
		t.Errorf("Fill: util %v, want %v", sys.Util, (0.93+0.5)/2)
	}
}

// A hung nvidia-smi is killed with its children (its process group), not
// only itself: none outlives the deadline.
func TestSMIDeadlineKillsItsChildren(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child")
	fakeSMI(t, "/bin/sleep 30 & echo $! > "+pidFile+"; wait")
	defer func(d time.Duration) { Deadline = d }(Deadline)
	Deadline = 300 * time.Millisecond
	_, err := SMI(context.Background(), "-L")
	if err == nil || !strings.Contains(err.Error(), "did not answer within") {
		t.Fatalf("got %v, want the deadline", err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	for end := time.Now().Add(3 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		// Gone, or a zombie its new parent has yet to reap.
		if err != nil || strings.Contains(string(st), ") Z ") {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("nvidia-smi's child %d outlived its deadline: %s", pid, st)
		}
	}
}

// nvidia-smi's output is read up to MaxSMIOutput: past it, one line.
func TestSMIOutputBounded(t *testing.T) {
	fakeSMI(t, fmt.Sprintf("/usr/bin/head -c %d /dev/zero", 2*MaxSMIOutput))
	_, err := Discover(context.Background())
	if err == nil || err.Error() != "nvidia-smi: its output passed 4 MiB; stopped reading it" {
		t.Fatalf("got %v, want one line saying the output passed 4 MiB", err)
	}
}

// A hung nvidia-smi: the advice fits what was given (a list cannot skip
// it; CUDA_VISIBLE_DEVICES can), and a long list is echoed cut.
func TestPlanAdviceWhenSMIHangs(t *testing.T) {
	fakeSMI(t, "exec /bin/sleep 30")
	defer func(d time.Duration) { Deadline = d }(Deadline)
	Deadline = 200 * time.Millisecond
	ctx := context.Background()
	for _, c := range []struct{ mode, want string }{
		{"auto", "finding the GPUs: nvidia-smi did not answer within 200ms (set CUDA_VISIBLE_DEVICES to the GPUs to use to skip nvidia-smi, or give --gpus none)"},
		{"0,1", "--gpus 0,1: finding the box's GPUs to check it: nvidia-smi did not answer within 200ms (set CUDA_VISIBLE_DEVICES to them to skip nvidia-smi, or give --gpus none)"},
	} {
		if _, err := Plan(ctx, c.mode, 0); err == nil || err.Error() != c.want {
			t.Errorf("Plan(%q): got %v, want %q", c.mode, err, c.want)
		}
	}
}

// A value repeated in a message is cut: a list of 10,000 ids is not
// echoed back whole.
func TestLongListEchoCut(t *testing.T) {
	boxOf4(t)
	ids := make([]string, 10000)
	for i := range ids {
		ids[i] = strconv.Itoa(i)
	}
	long := strings.Join(ids, ",")
	for _, c := range []struct {
		name string
		err  func() error
	}{
		{"entries", func() error { _, err := ParseList("--gpus", long); return err }},
		{"not an id", func() error { _, err := ParseList("--gpus", "0,"+strings.Repeat("x", 5000)); return err }},
		{"Plan", func() error {
			_, err := PlanAs(context.Background(), strings.Join(ids[:40], ","), 0, Names{GPUs: "sweep.json's gpus", Per: "sweep.json's gpus_per_member"})
			return err
		}},
	} {
		err := c.err()
		if err == nil || len(err.Error()) > 300 || !strings.Contains(err.Error(), "…") {
			t.Errorf("%s: got %d bytes %.300q, want a message of at most 300 bytes, the value cut with …", c.name, len(fmt.Sprint(err)), err)
		}
	}
	_, err := PlanAs(context.Background(), "9", 0, Names{GPUs: "sweep.json's gpus", Per: "sweep.json's gpus_per_member"})
	if err == nil || err.Error() != "sweep.json's gpus 9: no GPU 9 on this box; it has 0, 1, 2, 3 (nvidia-smi)" {
		t.Errorf("PlanAs: %v", err)
	}
}

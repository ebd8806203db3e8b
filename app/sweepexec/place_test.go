package sweepexec

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"selmix/core/search"
	"selmix/runs/sweep"
	"selmix/runs/sweep/sweeptest"
)

// twoSlots is a Placer of two one-device slots, "5" and "7", that fails
// the test if a device is taken twice or more are held than it has.
type twoSlots struct {
	t    *testing.T
	mu   sync.Mutex
	held map[string]bool
	most int // devices held at once, at most
	took int
}

func (p *twoSlots) Slots() int { return 2 }
func (p *twoSlots) Take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, d := range []string{"5", "7"} {
		if !p.held[d] {
			p.held[d] = true
			p.took++
			p.most = max(p.most, len(p.held))
			return []string{d}
		}
	}
	p.t.Errorf("Take with both slots held")
	return nil
}
func (p *twoSlots) Put(d []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(d) != 1 || !p.held[d[0]] {
		p.t.Errorf("Put(%q) of what is not held", d)
	}
	delete(p.held, d[0])
}
func (p *twoSlots) Env(d []string) []string {
	return []string{"CUDA_VISIBLE_DEVICES=" + strings.Join(d, ",")}
}
func (p *twoSlots) Describe() string { return "two slots" }

// The local executor runs at most the Placer's slots at once (whatever
// --parallel asks), gives each member its slot's environment, records the
// member's devices where status reads them, and frees them as it ends.
func TestExecuteLocalPlaced(t *testing.T) {
	s := sweeptest.New(t, sweeptest.SmallSpec, search.ExecLocal)
	seen := filepath.Join(t.TempDir(), "seen")
	bin := filepath.Join(t.TempDir(), "member")
	// Each member writes its index and the GPUs it sees.
	script := fmt.Sprintf("#!/bin/sh\necho \"$4 $CUDA_VISIBLE_DEVICES\" >> %s\n", seen)
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	p := &twoSlots{t: t, held: map[string]bool{}}
	var b bytes.Buffer
	err := Execute(context.Background(), s, Execution{Executor: search.ExecLocal, Members: s.AllMembers(), Binary: bin, Parallel: 5, Threads: 1, Placer: p, Out: &b})
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	for _, want := range []string{"local: 6 members, 2 at a time, 1 thread(s) each", "local: two slots\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
	if p.took != 6 || p.most > 2 || len(p.held) != 0 {
		t.Errorf("took %d, held at most %d, %d held at the end; want 6, ≤ 2, 0", p.took, p.most, len(p.held))
	}
	out, err := os.ReadFile(seen)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	slices.Sort(lines)
	if len(lines) != 6 {
		t.Fatalf("members saw:\n%s", out)
	}
	for i, l := range lines {
		idx, dev, _ := strings.Cut(l, " ")
		if idx != fmt.Sprint(i) || dev != "5" && dev != "7" {
			t.Errorf("member line %q: want index %d and GPU 5 or 7", l, i)
		}
		if got := s.Devices(i); !slices.Equal(got, []string{dev}) {
			t.Errorf("member %d: Devices = %q, the executor gave it %s", i, got, dev)
		}
		log, _ := os.ReadFile(s.LogPath(i))
		if !strings.Contains(string(log), ": CUDA_VISIBLE_DEVICES="+dev+" selmix sweep member ") {
			t.Errorf("member %d's log header does not name its GPU %s:\n%s", i, dev, log)
		}
	}
	st, err := sweep.NewReader(s, nil).Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var tb bytes.Buffer
	st.WriteTable(&tb)
	if head, _, _ := strings.Cut(tb.String(), "\n"); !strings.Contains(head, "GPUS") || st.Members[3].GPUsText() != strings.Join(s.Devices(3), ",") {
		t.Errorf("status:\n%s", tb.String())
	}
	if err := s.SetDevices(3, nil); err != nil || s.Devices(3) != nil {
		t.Errorf("SetDevices(nil): %v, left %q", err, s.Devices(3))
	}
}

// The dry run says how members are placed and at most how many run.
func TestDryRunPlaced(t *testing.T) {
	s := sweeptest.New(t, sweeptest.SmallSpec, search.ExecLocal)
	var b bytes.Buffer
	if err := DryRun(s, Execution{Executor: search.ExecLocal, Members: []int{0, 1, 2}, Binary: "/bin/selmix", Threads: 1, Placer: &twoSlots{t: t}, Out: &b}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nGPUs: two slots\n", "\nwould run 2 at a time, each: CUDA_VISIBLE_DEVICES=<its free GPUs> OPENBLAS_NUM_THREADS=1 GOMAXPROCS=1 /bin/selmix sweep member "} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("dry run lacks %q:\n%s", want, b.String())
		}
	}
}

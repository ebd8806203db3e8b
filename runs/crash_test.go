package runs

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	envHelperRoot = "SELMIX_RUNS_TEST_HELPER_ROOT"
	envHelperID   = "SELMIX_RUNS_TEST_HELPER_ID"
)

// TestHelperWriter is not a test: TestKillWriter runs it in a child
// process. It reopens the run and appends forever, printing
// "synced <seq> <step>" after each synced Append returns. Every other
// event refers to a record of arrays.bin holding its step, so kills land
// between records and their events too.
func TestHelperWriter(t *testing.T) {
	root := os.Getenv(envHelperRoot)
	if root == "" {
		t.Skip("helper process for TestKillWriter")
	}
	w, err := OpenWriter(root, os.Getenv(envHelperID))
	if err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(3)
	}
	fmt.Println("ready")
	for i := 0; ; i++ {
		step := 1000 + i
		sync := i%4 != 3
		var recs [][]Array
		if i%2 == 0 {
			recs = [][]Array{{{Name: "step", DType: Float64, Shape: []int{1 + i%500}, Data: stepData(step, 1+i%500)}}}
		}
		ev, err := w.AppendArrays("step", step, map[string]any{"i": i, "pad": strings.Repeat("x", i%300)}, recs, sync)
		if err != nil {
			fmt.Printf("error %v\n", err)
			os.Exit(3)
		}
		if sync {
			fmt.Printf("synced %d %d\n", ev.Seq, step)
		}
	}
}

// stepData is what the helper's record for step holds.
func stepData(step, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(step)
	}
	return out
}

// TestKillWriter kills a writer process with SIGKILL at random moments and
// checks each time that the log reads with at most a torn-tail warning,
// that seqs are 1..n, that every event reported synced is there, and that
// the next writer continues the seq.
func TestKillWriter(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	root := t.TempDir()
	w := mustCreate(t, root, "victim", Meta{})
	id, dir := w.ID(), w.Dir()
	w.Close()

	const trials = 24
	n := 0 // events in the log after the last kill
	torn := 0
	for trial := range trials {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$")
		cmd.Env = append(os.Environ(), envHelperRoot+"="+root, envHelperID+"="+id)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(out)
		ready := make(chan string, 1)
		go func() { l, _ := br.ReadString('\n'); ready <- l }()
		select {
		case l := <-ready:
			if l != "ready\n" {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("trial %d: child said %q, stderr %s", trial, l, stderr.String())
			}
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("trial %d: child not ready after 20s; stderr %s", trial, stderr.String())
		}
		time.Sleep(time.Duration(rand.IntN(30_000)) * time.Microsecond)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		rest, _ := io.ReadAll(br)
		cmd.Wait()

		// Everything the child reported as synced must be in the log.
		var synced [][2]int
		for _, l := range strings.SplitAfter(string(rest), "\n") {
			if !strings.HasSuffix(l, "\n") {
				continue // cut by the kill
			}
			var seq, step int
			if _, err := fmt.Sscanf(l, "synced %d %d\n", &seq, &step); err != nil {
				t.Fatalf("trial %d: child wrote %q", trial, l)
			}
			synced = append(synced, [2]int{seq, step})
		}
		evs, warns, err := ReadEvents(dir + "/" + eventsName)
		if err != nil {
			t.Fatalf("trial %d: log unreadable after kill: %v", trial, err)
		}
		if len(warns) > 1 || (len(warns) == 1 && warns[0].Line != len(evs)+1) {
			t.Fatalf("trial %d: warnings %v, want at most a torn tail at line %d", trial, warns, len(evs)+1)
		}
		torn += len(warns)
		if len(evs) < n {
			t.Fatalf("trial %d: log shrank from %d to %d events", trial, n, len(evs))
		}
		for i, e := range evs {
			if e.Seq != i+1 {
				t.Fatalf("trial %d: event %d has seq %d", trial, i, e.Seq)
			}
		}
		if len(synced) > 0 && synced[0][0] != n+1 {
			t.Errorf("trial %d: reopened writer started at seq %d, want %d", trial, synced[0][0], n+1)
		}
		// Every record an event refers to is whole and holds its step.
		af, err := OpenArrayFile(dir + "/" + arraysName)
		if err != nil && len(evs) > 0 {
			t.Fatalf("trial %d: %v", trial, err)
		}
		for _, e := range evs {
			for _, ref := range e.Arrays {
				arrs, err := af.Read(ref)
				if err != nil {
					t.Fatalf("trial %d: event %d: %v", trial, e.Seq, err)
				}
				if d := arrs[0].Data; d[0] != float64(e.Step) || d[len(d)-1] != float64(e.Step) {
					t.Fatalf("trial %d: event %d at step %d refers to a record of step %v", trial, e.Seq, e.Step, d[0])
				}
			}
		}
		if af != nil {
			af.Close()
		}
		for _, s := range synced {
			if s[0] > len(evs) {
				t.Fatalf("trial %d: synced event %d missing; log has %d", trial, s[0], len(evs))
			}
			if e := evs[s[0]-1]; e.Step != s[1] || e.Kind != "step" {
				t.Fatalf("trial %d: event %d is %+v, want step %d", trial, s[0], e, s[1])
			}
		}
		if live, pid := IsLive(dir); live {
			t.Fatalf("trial %d: run still live (pid %d) after its writer was killed", trial, pid)
		}
		r, err := Open(root, id)
		if err != nil {
			t.Fatalf("trial %d: Open: %v", trial, err)
		}
		if got := r.EffectiveStatus(); got != StatusCrashed {
			t.Fatalf("trial %d: status %q, want crashed", trial, got)
		}
		n = len(evs)
	}
	t.Logf("%d trials, %d events, %d torn tails", trials, n, torn)

	w, err := OpenWriter(root, id)
	if err != nil {
		t.Fatalf("OpenWriter after kills: %v", err)
	}
	defer w.Close()
	if ev, err := w.Append("after", 0, nil, true); err != nil || ev.Seq != n+1 {
		t.Errorf("Append after kills = seq %d, %v; want %d", ev.Seq, err, n+1)
	}
}

const envHelperCreate = "SELMIX_RUNS_TEST_HELPER_CREATE"

// TestHelperCreate is not a test: TestKillCreate runs it in a child
// process. It creates runs under the root it is given, one after
// another, closing each, until it is killed.
func TestHelperCreate(t *testing.T) {
	root := os.Getenv(envHelperCreate)
	if root == "" {
		t.Skip("helper process for TestKillCreate")
	}
	fmt.Println("ready")
	for {
		w, err := Create(root, "kill-me", "seed = 1\n", Meta{})
		if err != nil {
			fmt.Printf("error %v\n", err)
			os.Exit(3)
		}
		w.Close()
	}
}

// TestKillCreate kills a process creating runs with SIGKILL at random
// moments and checks each time that every run of the root opens: a
// creation cut off leaves no folder named like a run without run.json,
// only a hidden one that listings pass over.
func TestKillCreate(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	root := t.TempDir()
	const trials = 20
	for trial := range trials {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperCreate$")
		cmd.Env = append(os.Environ(), envHelperCreate+"="+root)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ready := make(chan string, 1)
		go func() { l, _ := bufio.NewReader(out).ReadString('\n'); ready <- l }()
		select {
		case l := <-ready:
			if l != "ready\n" {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("trial %d: child said %q, stderr %s", trial, l, stderr.String())
			}
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("trial %d: child not ready after 20s; stderr %s", trial, stderr.String())
		}
		time.Sleep(time.Duration(5_000+rand.IntN(20_000)) * time.Microsecond)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		all, err := List(root)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range all {
			if r.Broken() {
				t.Fatalf("trial %d: run %s after a kill: %s", trial, r.Meta.ID, r.Meta.Status)
			}
			if _, err := Open(root, r.Meta.ID); err != nil {
				t.Fatalf("trial %d: Open: %v", trial, err)
			}
		}
		ents, _ := os.ReadDir(root)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			if _, err := os.Stat(filepath.Join(root, e.Name(), metaName)); err != nil {
				t.Fatalf("trial %d: folder %s has no run.json: %v", trial, e.Name(), err)
			}
		}
	}
	all, _ := List(root)
	t.Logf("%d trials, %d runs created", trials, len(all))
}

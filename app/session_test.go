package app

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"selmix/core/experiment"
	"selmix/core/loop"
	"selmix/core/worker/workertest"
	"selmix/runs"
	"selmix/runs/record"
)

// fakeConfig is a short run trained by this test binary as a fake worker
// (TestMain); the caller sets the worker's mode with t.Setenv.
func fakeConfig(t *testing.T) experiment.Config {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := experiment.Default()
	c.Worker.Command = []string{self}
	c.Finetune.Steps, c.Finetune.Refresh, c.Finetune.Batch = 30, 10, 16
	c.Record.CheckpointEvery = 1
	c.Record.Plots = false
	if err := c.Validate(); err != nil {
		t.Fatalf("the fake run's config: %v", err)
	}
	return c
}

// The engine refusing a configuration (train.New) is bad input, exit 2,
// where a run starts from step 0: in Start, and in Resume's start-over
// of a run without a valid checkpoint, which shares Session.fresh. (A
// resumed run's configuration is validated when it is read, so the
// refusal cannot be reached through Resume from files.)
func TestEngineRefusalIsBadInput(t *testing.T) {
	t.Setenv(workertest.Env, "ok")
	c := fakeConfig(t)
	c.Finetune.Steps = 0 // experiment.Validate would refuse it; the engine must too
	t.Run("start", func(t *testing.T) {
		root := t.TempDir()
		var out bytes.Buffer
		s := &Session{Root: root, Out: &out, Quiet: true}
		err := s.Start(context.Background(), c, Origin{})
		if code := ExitCode(err); code != ExitBadInput || !strings.Contains(fmt.Sprint(err), "steps: want ≥ 1") {
			t.Errorf("Start with finetune.steps = 0: %v (exit %d), want exit 2 naming steps", err, code)
		}
		if rs, _ := runs.List(root); len(rs) != 0 {
			t.Errorf("%d runs created", len(rs))
		}
	})
	t.Run("resume start-over", func(t *testing.T) {
		s := &Session{Root: t.TempDir(), Out: io.Discard, Quiet: true}
		_, sig := withSignals(context.Background())
		defer sig.stop()
		eng, err := s.fresh(sig, c)
		if code := ExitCode(err); eng != nil || code != ExitBadInput {
			t.Errorf("fresh with finetune.steps = 0: engine %v, %v (exit %d), want exit 2", eng, err, code)
		}
	})
}

var runIDRe = regexp.MustCompile(`(?m)^run (\S+) \(`)

// A Session carries its hooks through a run's life: Created gets the
// new id, the worker's stderr reaches WorkerLog, Summary gets the
// session's first step; a fork starts at its parent's checkpoint with
// only what --set changed as controls, and a replay of it is identical.
func TestSessionStartForkReplay(t *testing.T) {
	t.Setenv(workertest.Env, "ok")
	root := t.TempDir()
	var (
		mu      sync.Mutex
		created []string
		logged  int
		froms   []int
	)
	var out bytes.Buffer
	s := &Session{
		Root: root, Out: &out, Quiet: true,
		Created: func(id string) { created = append(created, id) },
		Summary: func(w io.Writer, sum *loop.Summary, from int) { froms = append(froms, from) },
		WorkerLog: func(dir string, note func(string)) (func(string), func()) {
			return func(string) { mu.Lock(); logged++; mu.Unlock() }, func() {}
		},
	}
	ctx := context.Background()
	if err := s.Start(ctx, fakeConfig(t), Origin{}); err != nil {
		t.Fatalf("Start: %v\n%s", err, out.String())
	}
	m := runIDRe.FindStringSubmatch(out.String())
	if m == nil || len(created) != 1 || created[0] != m[1] {
		t.Fatalf("Created got %q, output:\n%s", created, out.String())
	}
	id := m[1]
	if want := fmt.Sprintf("run %s finished at step 30: ", id); !strings.Contains(out.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, out.String())
	}
	mu.Lock()
	if logged == 0 {
		t.Errorf("the worker's stderr never reached WorkerLog")
	}
	mu.Unlock()

	out.Reset()
	if err := s.Fork(ctx, id, Checkpoint{Step: 20}, []string{"finetune.steps=40", "finetune.s=5"}); err != nil {
		t.Fatalf("Fork: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "forking run "+id+" at step 20\n") {
		t.Errorf("fork output:\n%s", out.String())
	}
	fm := runIDRe.FindStringSubmatch(out.String())
	if fm == nil {
		t.Fatalf("no fork run in:\n%s", out.String())
	}
	parent, err := runs.Open(root, id)
	if err != nil {
		t.Fatal(err)
	}
	wantName := parent.Meta.Name + "-fork"
	fork, err := runs.Open(root, fm[1])
	if err != nil {
		t.Fatal(err)
	}
	if fork.Meta.Parent != id || fork.Meta.ParentStep != 20 || fork.Meta.Name != wantName {
		t.Errorf("fork's meta: parent %q at %d, want %q at 20 named %s", fork.Meta.Parent, fork.Meta.ParentStep, id, wantName)
	}
	fh, err := record.Load(fork)
	if err != nil {
		t.Fatal(err)
	}
	var sets []string
	for _, a := range fh.Controls {
		sets = append(sets, fmt.Sprintf("%s=%s@%d", a.Control.Key, a.Control.Value, a.Step))
	}
	if len(sets) != 1 || sets[0] != "s=5@20" {
		t.Errorf("fork's controls %q, want only [s=5@20] (what --set changed)", sets)
	} else if src := fh.Controls[0].Control.Source; src != loop.SourceSchedule {
		t.Errorf("fork's --set control has source %q, want schedule", src)
	}
	if len(froms) != 2 || froms[0] != 0 || froms[1] != 20 {
		t.Errorf("Summary saw sessions from steps %v, want [0 20]", froms)
	}

	out.Reset()
	if err := s.Replay(ctx, fork.Meta.ID); err != nil {
		t.Fatalf("Replay: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), " is identical to "+fork.Meta.ID) {
		t.Errorf("replay output:\n%s", out.String())
	}
	// The replay's controls are the fork's, sent again: source replay.
	rm := regexp.MustCompile(`replay (\S+) is identical`).FindStringSubmatch(out.String())
	if rm == nil {
		t.Fatalf("no replay id in:\n%s", out.String())
	}
	rr, err := runs.Open(root, rm[1])
	if err != nil {
		t.Fatal(err)
	}
	rh, err := record.Load(rr)
	if err != nil {
		t.Fatal(err)
	}
	if len(rh.Controls) != 1 || rh.Controls[0].Control.Source != loop.SourceReplay || rh.Controls[0].Control.Key != "s" {
		t.Errorf("replay's controls %+v, want s=5 from the replay", rh.Controls)
	}
	// It is marked as a replay where runs are listed (issue #37).
	if !rr.Meta.HasTags("replay") {
		t.Errorf("replay's tags %q, want replay", rr.Meta.Tags)
	}
}

// Default names are unique in the runs root (issue #37, bug 6: `make run`
// and a 400-step run were both min-recall-selmix): the second run of an
// unnamed configuration is min-recall-selmix-2; a name given is kept.
func TestDefaultNamesUnique(t *testing.T) {
	t.Setenv(workertest.Env, "ok")
	root := t.TempDir()
	s := &Session{Root: root, Out: io.Discard, Quiet: true}
	c := fakeConfig(t)
	c.Finetune.Steps = 10
	named := c
	named.Name = "mine"
	for _, cfg := range []experiment.Config{c, c, named, named} {
		if err := s.Start(context.Background(), cfg, Origin{}); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := runs.List(root)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, r.Meta.Name)
	}
	slices.Sort(got)
	if want := []string{"min-recall-selmix", "min-recall-selmix-2", "mine", "mine"}; !slices.Equal(got, want) {
		t.Errorf("names %q, want %q", got, want)
	}
}

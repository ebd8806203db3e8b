package app

import (
	"context"
	"fmt"

	"selmix/core/experiment"
	"selmix/core/local"
	"selmix/core/loop"
	"selmix/runs"
)

// Fork starts a new run from run id's checkpoint that at selects, with
// id's configuration, its hyperparameters as in force at that checkpoint
// (live changes included), overlaid by sets (section.key=value); the
// hyperparameters sets change take effect at the fork step as controls.
func (s *Session) Fork(ctx context.Context, id string, at Checkpoint, sets []string) error {
	return s.fork(ctx, id, at, sets, loop.SourceSchedule)
}

// fork is Fork whose changed hyperparameters are controls from source.
func (s *Session) fork(ctx context.Context, id string, at Checkpoint, sets []string, source loop.ControlSource) error {
	w, root := s.Out, s.root()
	// The parent is read whole, as every reader reads a run: damage to
	// its log or arrays is refused here as there (a fork started a child
	// of a run every other command called damaged).
	parent, _, err := OpenHistory(root, id)
	if err != nil {
		return err
	}
	pc, err := RunConfig(parent)
	if err != nil {
		return err
	}
	c := pc
	c.Name = ""
	for _, kv := range sets {
		if err := experiment.Set(&c, kv); err != nil {
			return UsageError{err}
		}
	}
	if err := c.Validate(); err != nil {
		return UsageError{err}
	}
	base := c.Name
	if base == "" {
		base = parent.Meta.Name + "-fork"
	}
	if c.Name, err = freeName(root, base); err != nil {
		return err
	}
	if c.Name != base {
		fmt.Fprintf(w, "a run is named %s already: this fork is %s\n", base, c.Name)
	}
	step, state, err := checkpointAt(w, parent, at)
	if err != nil {
		return err
	}
	// The checkpoint carries the parent's hyperparameters with its
	// controls applied (those changed live included), and the fork runs
	// with them: its configuration records them, with sets on top, and
	// what sets changed is applied as controls at the fork step.
	ck, err := local.ParseCheckpoint(state)
	if err != nil {
		return err
	}
	at0 := ck.Hyper()
	if c.Finetune.Hyper, err = forkHyper(pc, at0, sets); err != nil {
		return err
	}
	from := Origin{Parent: parent.Meta.ID, Step: step, Best: at.Best, State: state,
		Controls: hyperControls(at0, c.Finetune.Hyper, step, source)}
	if at.Best {
		fmt.Fprintf(w, "forking run %s at its best checkpoint (step %d)\n", parent.Meta.ID, step)
	} else {
		fmt.Fprintf(w, "forking run %s at step %d\n", parent.Meta.ID, step)
	}
	return s.Start(ctx, c, from)
}

// forkHyper is the hyperparameters of a fork of a run of configuration
// pc from a checkpoint whose hyperparameters are at: at, overlaid by sets.
func forkHyper(pc experiment.Config, at loop.Hyper, sets []string) (loop.Hyper, error) {
	c := pc
	c.Finetune.Hyper = at
	for _, kv := range sets {
		if err := experiment.Set(&c, kv); err != nil {
			return loop.Hyper{}, UsageError{err}
		}
	}
	if err := c.Validate(); err != nil {
		return loop.Hyper{}, UsageError{err}
	}
	return c.Finetune.Hyper, nil
}

// hyperControls are the Set controls that turn hyperparameters from into
// to at step at: planned before the run starts (source schedule).
func hyperControls(from, to loop.Hyper, at int, source loop.ControlSource) []loop.Control {
	var out []loop.Control
	for _, k := range loop.HyperKeys() {
		a, _ := from.Get(k)
		b, _ := to.Get(k)
		if a != b {
			out = append(out, loop.Control{Op: loop.OpSet, Key: k, Value: b, At: at, Source: source})
		}
	}
	return out
}

// freeName is base if no run under root has that name, else the first of
// base-2, base-3, … that none has: two forks never share a name.
func freeName(root, base string) (string, error) {
	rs, err := runs.List(root)
	if err != nil {
		return "", err
	}
	taken := make(map[string]bool, len(rs))
	for _, r := range rs {
		taken[r.Meta.Name] = true
	}
	name := base
	for n := 2; taken[name]; n++ {
		name = fmt.Sprintf("%s-%d", base, n)
	}
	return name, nil
}

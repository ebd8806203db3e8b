package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"selmix/core/loop"
	"selmix/runs"
	"selmix/runs/record"
)

// Replay starts a new run with run id's configuration (for a fork, from
// the same parent checkpoint), applies every control id logged at its
// step, and compares the outcomes: an error lists what differs.
func (s *Session) Replay(ctx context.Context, id string) error {
	w, root := s.Out, s.root()
	orig, h, err := OpenHistory(root, id)
	if err != nil {
		return err
	}
	if h.Final == nil {
		return BadInput("run %s has not ended (status %s): resume it first", orig.Meta.ID, orig.EffectiveStatus())
	}
	c, err := RunConfig(orig)
	if err != nil {
		return err
	}
	c.Name = "replay-of-" + orig.Meta.ID
	exact, why := UseRunBLAS(w, orig.Meta)
	from, err := replayOrigin(root, orig)
	if err != nil {
		return err
	}
	from.Controls = h.Replayable(from.Step-1, true)
	for i := range from.Controls {
		from.Controls[i].Source = loop.SourceReplay
	}
	var newID string
	o := *s
	o.Created = func(id string) { newID = id }
	if err := o.Start(ctx, c, from); err != nil {
		return err
	}
	// Marked as a replay wherever runs are listed (runs ls, the runs
	// browser, --tag filters): a check, not an experiment of its own.
	if _, err := runs.Retag(root, newID, []string{"replay"}, nil, nil); err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	replay, err := runs.Open(root, newID)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	rh, err := record.Load(replay)
	if err != nil {
		return err
	}
	if d := envDiff(orig.Meta.WorkerEnv, replay.Meta.WorkerEnv); d != "" {
		exact, why = false, joinWhy(why, d)
	}
	step := rh.Refreshes[len(rh.Refreshes)-1].Step
	diffs := compareOutcome(h, rh)
	if len(diffs) == 0 {
		fmt.Fprintf(w, "replay %s is identical to %s: final summary and last evaluation (step %d) match exactly\n",
			replay.Meta.ID, orig.Meta.ID, step)
		return nil
	}
	if exact {
		return fmt.Errorf("replay %s differs from %s:\n  %s", replay.Meta.ID, orig.Meta.ID, strings.Join(diffs, "\n  "))
	}
	// Not the same arithmetic (kernel, threads, worker): the same run
	// within rounding is all that can be asked.
	largest, off := compareWithin(h, rh, ReplayTolerance)
	if len(off) > 0 {
		return CodeError{ExitInexact, fmt.Errorf("replay %s differs from %s (numbers by up to %.2g relative, tolerance %g) where its arithmetic is not the original's (%s): "+
			"rounding that differs in the last bit grows over a run's steps, and this cannot tell it from a real divergence; replay it where the original's kernel runs to check it exactly:\n  %s",
			replay.Meta.ID, orig.Meta.ID, largest, ReplayTolerance, why, strings.Join(off, "\n  "))}
	}
	fmt.Fprintf(w, "replay %s equals %s within %g (%s): final summary and last evaluation (step %d), largest difference %.2g\n",
		replay.Meta.ID, orig.Meta.ID, ReplayTolerance, why, step, largest)
	return nil
}

// replayOrigin is where a replay of orig begins: from step 0, or for a
// fork at its parent's checkpoint it was forked from.
func replayOrigin(root string, orig *runs.Run) (Origin, error) {
	if orig.Meta.Parent == "" {
		return Origin{}, nil
	}
	parent, err := OpenRun(root, orig.Meta.Parent)
	if err != nil {
		return Origin{}, fmt.Errorf("replaying fork %s: %w", orig.Meta.ID, err)
	}
	step := orig.Meta.ParentStep
	var state []byte
	if orig.Meta.ParentBest {
		if state, err = parent.BestCheckpointAt(step); err != nil {
			return Origin{}, fmt.Errorf("replaying fork %s: %w", orig.Meta.ID, err)
		}
	} else if got, b, err := parent.LatestCheckpointAtOrBefore(step); err != nil || got != step {
		return Origin{}, fmt.Errorf("replaying fork %s: parent %s has no checkpoint at step %d", orig.Meta.ID, parent.Meta.ID, step)
	} else {
		state = b
	}
	return Origin{Parent: parent.Meta.ID, Step: step, Best: orig.Meta.ParentBest, State: state}, nil
}

// compareOutcome lists how b's result differs from a's (wall time aside).
func compareOutcome(a, b *record.History) []string {
	var diffs []string
	o, err := outcomes(a, b)
	if !reflect.DeepEqual(o.sa, o.sb) {
		ja, _ := json.Marshal(o.sa)
		jb, _ := json.Marshal(o.sb)
		diffs = append(diffs, fmt.Sprintf("final summary:\n    original %s\n    replay   %s", ja, jb))
	}
	if err != nil {
		return append(diffs, err.Error())
	}
	if ja, jb := mustJSON(o.la), mustJSON(o.lb); ja != jb {
		diffs = append(diffs, fmt.Sprintf("last evaluation: original at step %d, replay at step %d differ", o.la.Step, o.lb.Step))
	}
	return diffs
}

// outcome is what a replay compares of two runs: their final summaries
// and last evaluations, with what may differ between two executions of
// one run (wall time, the loss of steps, the time) left out.
type outcome struct {
	sa, sb loop.Summary
	la, lb record.RefreshEvent
}

// outcomes is a's and b's outcome; the error says why the last
// evaluations could not be read (the summaries are there even then).
func outcomes(a, b *record.History) (outcome, error) {
	o := outcome{sa: *a.Final, sb: *b.Final}
	o.sa.Seconds, o.sb.Seconds = 0, 0
	if len(a.Refreshes) == 0 || len(b.Refreshes) == 0 {
		return o, errors.New("no evaluation logged")
	}
	o.la, o.lb = a.Refreshes[len(a.Refreshes)-1], b.Refreshes[len(b.Refreshes)-1]
	o.la.Loss, o.lb.Loss = nil, nil
	o.la.Time, o.lb.Time = time.Time{}, time.Time{}
	// G and P stay on disk until asked for; the last refresh always has them.
	var ea, eb error
	o.la.Stats.G, o.la.Stats.P, ea = a.Matrices(len(a.Refreshes) - 1)
	o.lb.Stats.G, o.lb.Stats.P, eb = b.Matrices(len(b.Refreshes) - 1)
	if err := errors.Join(ea, eb); err != nil {
		return o, errors.New("last evaluation: " + err.Error())
	}
	// What the original's selmix did not record yet is not compared: a
	// run recorded before the coverage aims were replays identical.
	if o.la.Stats.Aims == nil {
		o.lb.Stats.Aims = nil
	}
	return o, nil
}

// ReplayTolerance is how far a replay's numbers may be from its
// original's where they cannot be expected to be identical (another
// OpenBLAS kernel, thread count or worker environment): each number of
// the final summary and the last evaluation within ReplayTolerance ×
// max(1, |value|). Rounding that differs in the last bit of a sum grows
// over a run's steps; it stays far inside this on the runs measured
// (docs/run-format.md, "What exactness depends on").
const ReplayTolerance = 1e-5

// compareWithin compares b's outcome with a's number by number: the
// largest difference relative to max(1, |value|), and what differs beyond
// tol or in anything but a number.
func compareWithin(a, b *record.History, tol float64) (largest float64, off []string) {
	o, err := outcomes(a, b)
	if err != nil {
		return 0, []string{err.Error()}
	}
	for _, p := range []struct {
		name string
		a, b any
	}{{"final summary", o.sa, o.sb}, {"last evaluation", o.la, o.lb}} {
		walkValues(p.name, reflect.ValueOf(p.a), reflect.ValueOf(p.b), func(path string, x, y float64) {
			if x == y || math.IsNaN(x) && math.IsNaN(y) {
				return
			}
			d := math.Abs(x-y) / math.Max(1, math.Max(math.Abs(x), math.Abs(y)))
			if !(d <= tol) && len(off) < 10 {
				off = append(off, fmt.Sprintf("%s: original %v, replay %v", path, x, y))
			}
			if d > largest {
				largest = d
			}
		}, func(path string) {
			if len(off) < 10 {
				off = append(off, path+": differs")
			}
		})
	}
	return largest, off
}

// walkValues visits the floating-point numbers at the same places in two
// values of one type (structs, pointers, slices, maps); anything else that
// differs (an integer, a string, a length, nil against a value) goes to
// other, named by its path.
func walkValues(path string, a, b reflect.Value, num func(path string, x, y float64), other func(path string)) {
	if a.IsValid() != b.IsValid() || a.IsValid() && a.Type() != b.Type() {
		other(path)
		return
	}
	if !a.IsValid() {
		return
	}
	switch a.Kind() {
	case reflect.Float32, reflect.Float64:
		num(path, a.Float(), b.Float())
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				other(path)
			}
			return
		}
		walkValues(path, a.Elem(), b.Elem(), num, other)
	case reflect.Struct:
		for i := range a.NumField() {
			if a.Type().Field(i).IsExported() {
				walkValues(path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i), num, other)
			}
		}
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			other(path)
			return
		}
		for i := range a.Len() {
			walkValues(fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i), num, other)
		}
	case reflect.Map:
		if a.Len() != b.Len() {
			other(path)
			return
		}
		keys := a.MapKeys()
		slices.SortFunc(keys, func(x, y reflect.Value) int { return strings.Compare(fmt.Sprint(x), fmt.Sprint(y)) })
		for _, k := range keys {
			bv := b.MapIndex(k)
			if !bv.IsValid() {
				other(fmt.Sprintf("%s[%v]", path, k))
				continue
			}
			walkValues(fmt.Sprintf("%s[%v]", path, k), a.MapIndex(k), bv, num, other)
		}
	default:
		if a.CanInterface() && !reflect.DeepEqual(a.Interface(), b.Interface()) {
			other(path)
		}
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"selmix/core/train"
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
	UseRunBLAS(w, orig.Meta)
	from, err := replayOrigin(root, orig)
	if err != nil {
		return err
	}
	from.Controls = h.Replayable(from.Step-1, true)
	for i := range from.Controls {
		from.Controls[i].Source = train.SourceReplay
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
	diffs := compareOutcome(h, rh)
	if len(diffs) > 0 {
		return fmt.Errorf("replay %s differs from %s:\n  %s", replay.Meta.ID, orig.Meta.ID, strings.Join(diffs, "\n  "))
	}
	fmt.Fprintf(w, "replay %s is identical to %s: final summary and last evaluation (step %d) match exactly\n",
		replay.Meta.ID, orig.Meta.ID, rh.Refreshes[len(rh.Refreshes)-1].Step)
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
	sa, sb := *a.Final, *b.Final
	sa.Seconds, sb.Seconds = 0, 0
	if !reflect.DeepEqual(sa, sb) {
		ja, _ := json.Marshal(sa)
		jb, _ := json.Marshal(sb)
		diffs = append(diffs, fmt.Sprintf("final summary:\n    original %s\n    replay   %s", ja, jb))
	}
	if len(a.Refreshes) == 0 || len(b.Refreshes) == 0 {
		return append(diffs, "no evaluation logged")
	}
	la, lb := a.Refreshes[len(a.Refreshes)-1], b.Refreshes[len(b.Refreshes)-1]
	la.Loss, lb.Loss = nil, nil
	la.Time, lb.Time = time.Time{}, time.Time{}
	// G and P stay on disk until asked for; the last refresh always has them.
	var ea, eb error
	la.Stats.G, la.Stats.P, ea = a.Matrices(len(a.Refreshes) - 1)
	lb.Stats.G, lb.Stats.P, eb = b.Matrices(len(b.Refreshes) - 1)
	if err := errors.Join(ea, eb); err != nil {
		return append(diffs, "last evaluation: "+err.Error())
	}
	if ja, jb := mustJSON(la), mustJSON(lb); ja != jb {
		diffs = append(diffs, fmt.Sprintf("last evaluation: original at step %d, replay at step %d differ", la.Step, lb.Step))
	}
	return diffs
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

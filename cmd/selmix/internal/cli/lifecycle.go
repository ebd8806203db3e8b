package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"selmix/core/experiment"
	"selmix/core/local"
	"selmix/core/npy"
	"selmix/core/train"
	"selmix/runs"
	"selmix/runs/live"
	"selmix/runs/record"
)

// runConfig parses the resolved configuration a run was recorded with.
func runConfig(r *runs.Run) (experiment.Config, error) {
	text, err := r.Config()
	if err != nil {
		return experiment.Config{}, err
	}
	c, err := experiment.Parse(text, filepath.Join(r.Dir, "config.toml"))
	if err != nil {
		return c, usageError{err}
	}
	return c, nil
}

func newResumeCmd() *cobra.Command {
	var root string
	var quiet, serve bool
	cmd := &cobra.Command{
		Use:   "resume RUN",
		Short: "Continue a stopped or crashed run from its last checkpoint",
		Long: `resume continues RUN in place from its last checkpoint, re-applying the
control changes logged after it. A damaged checkpoint is named and passed
over for the one before it (none left: the run starts over). The result equals an uninterrupted run:
events already in the log are not written twice. Like run, it exits with 130
or 143 when SIGINT, SIGTERM or selmix stop interrupts it again.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return resumeRun(cmd.Context(), cmd.OutOrStdout(), runs.Root(root), args[0], startOpts{quiet: quiet, serve: serve})
		},
	}
	addRunsFlag(cmd, &root)
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only the final table")
	cmd.Flags().BoolVar(&serve, "serve", false, "serve the run's control socket so viewers can attach and selmix stop works")
	return cmd
}

func resumeRun(ctx context.Context, w io.Writer, root, id string, o startOpts) error {
	ctx, sig := withSignals(ctx)
	defer sig.stop()
	r, err := openRun(root, id)
	if err != nil {
		return err
	}
	if r.Live {
		return badInput("run %s is live (pid %d): it is still running", r.Meta.ID, r.Pid)
	}
	// The log, not run.json, says whether the run ended: a run whose final
	// event is missing (say, a torn last line) is resumed, and resuming
	// writes that event again.
	h, err := record.Load(r)
	if err != nil {
		return err
	}
	useRunBLAS(w, r.Meta)
	if h.Final != nil {
		return badInput("run %s has finished; fork it to train further (selmix fork %s --set finetune.steps=N)", r.Meta.ID, r.Meta.ID)
	}
	c, err := runConfig(r)
	if err != nil {
		return err
	}
	tc := c.Train()
	step, state, err := checkpointAt(w, r, ckptSel{step: -1})
	switch {
	case errors.Is(err, runs.ErrNoCheckpoint):
	case errors.Is(err, runs.ErrDamaged):
		fmt.Fprintf(w, "%v: starting over from step 0\n", err)
	case err != nil:
		return err
	}
	var eng *train.Engine
	if state == nil {
		// Crashed before its first (valid) checkpoint: start over; the
		// events it logged are reproduced exactly and not written twice.
		step = 0
		tr, err := prepare(sig.workerCtx, w, c, o.quiet)
		if err != nil {
			return sig.interrupted(err)
		}
		if eng, err = train.New(tc, tr); err != nil {
			tr.Close()
			return err
		}
	} else {
		ckpt, err := local.ParseCheckpoint(state)
		if err != nil {
			return fmt.Errorf("%s: checkpoint at step %d: %w", r.Dir, step, err)
		}
		tr, err := restore(sig.workerCtx, w, c, ckpt, o.quiet)
		if err != nil {
			return sig.interrupted(err)
		}
		if eng, err = train.Resume(tc, tr, ckpt); err != nil {
			tr.Close()
			return fmt.Errorf("%s: checkpoint at step %d: %w", r.Dir, step, err)
		}
	}
	defer eng.Trainer().Close()
	rec, err := record.Reopen(root, r.Meta.ID)
	if err != nil {
		return err
	}
	if !o.serve {
		// A socket left by a process that died serves nobody; we hold the
		// run's lock, so no live process owns it.
		os.Remove(filepath.Join(r.Dir, live.SocketName))
	}
	// Controls acknowledged after the checkpoint are re-sent at their steps.
	acked := eng.Acked()
	for i, a := range h.Controls {
		if i < acked || a.Err != "" || a.Control.Op != train.OpSet || a.Control.Auto {
			continue
		}
		c := a.Control
		c.At = a.Step
		eng.Send(c)
	}
	fmt.Fprintf(w, "resuming run %s from step %d (%s)\n", r.Meta.ID, step, r.Dir)
	return execute(ctx, sig, w, o, eng, rec, c, step, true)
}

func newForkCmd() *cobra.Command {
	var (
		root         string
		at           string
		sets         []string
		quiet        bool
		serve, shake bool
	)
	cmd := &cobra.Command{
		Use:   "fork RUN [--at STEP|best] [--set section.key=value ...]",
		Short: "Start a new run from a checkpoint of RUN with changed settings",
		Long: `fork starts a new run from RUN's checkpoint at or before STEP (default: the
latest; a damaged one is named and passed over for the one before it), or
with --at best from its best checkpoint (the model at the best validation ψ
of the optimized objective), with RUN's configuration overlaid by --set.
Changed [finetune]
hyperparameters take effect at the fork step and are logged as control
changes; the new run's record names its parent.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o := startOpts{root: root, quiet: quiet, serve: serve}
			var hs *childHandshake
			if shake {
				hs = newChildHandshake()
				o.created = hs.created(root)
			}
			step, best, err := parseAt("--at", at)
			if err != nil {
				return err
			}
			err = forkRun(cmd.Context(), cmd.OutOrStdout(), runs.Root(root), args[0], ckptSel{step, best}, sets, o)
			hs.fail(err)
			return err
		},
	}
	addRunsFlag(cmd, &root)
	cmd.Flags().BoolVar(&serve, "serve", false, "serve the new run's control socket so viewers can attach")
	cmd.Flags().BoolVar(&shake, "handshake", false, "internal: report the run id on fd 3")
	cmd.Flags().MarkHidden("handshake")
	cmd.Flags().StringVar(&at, "at", "", "fork at the checkpoint at or before `STEP`, or at best (default: the latest)")
	cmd.Flags().StringArrayVar(&sets, "set", nil, "override one configuration key: `section.key=value` (repeatable)")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only the final table")
	return cmd
}

// hyperControls are the Set controls that turn hyperparameters from into to.
func hyperControls(from, to train.Hyper, at int) []train.Control {
	var out []train.Control
	for _, k := range train.HyperKeys() {
		a, _ := from.Get(k)
		b, _ := to.Get(k)
		if a != b {
			out = append(out, train.Control{Op: train.OpSet, Key: k, Value: b, At: at})
		}
	}
	return out
}

// ckptSel selects a run's checkpoint: the best one, or the one at or
// before step (a negative step: the latest).
type ckptSel struct {
	step int
	best bool
}

// parseAt reads a checkpoint flag's value: a step ≥ 0, "best", or ""
// (the latest).
func parseAt(flag, v string) (step int, best bool, err error) {
	switch v {
	case "":
		return -1, false, nil
	case "best":
		return 0, true, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, false, badInput("%s %q: want a step ≥ 0 or best (leave %s out for the latest checkpoint)", flag, v, flag)
	}
	return n, false, nil
}

func forkRun(ctx context.Context, w io.Writer, root, id string, at ckptSel, sets []string, o startOpts) error {
	parent, err := openRun(root, id)
	if err != nil {
		return err
	}
	pc, err := runConfig(parent)
	if err != nil {
		return err
	}
	c := pc
	c.Name = ""
	for _, kv := range sets {
		if err := experiment.Set(&c, kv); err != nil {
			return usageError{err}
		}
	}
	if err := c.Validate(); err != nil {
		return usageError{err}
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
	ptc := pc.Train()
	tc := c.Train()
	// The checkpoint carries the parent's hyperparameters with its
	// controls applied; only what --set changed is applied on top.
	o.parent, o.parentStep, o.parentBest, o.state = parent.Meta.ID, step, at.best, state
	o.controls = hyperControls(ptc.Hyper, tc.Hyper, step)
	if at.best {
		fmt.Fprintf(w, "forking run %s at its best checkpoint (step %d)\n", parent.Meta.ID, step)
	} else {
		fmt.Fprintf(w, "forking run %s at step %d\n", parent.Meta.ID, step)
	}
	return startRun(ctx, w, c, o)
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

func newReplayCmd() *cobra.Command {
	var (
		root  string
		quiet bool
	)
	cmd := &cobra.Command{
		Use:   "replay RUN",
		Short: "Re-execute a run from its config and logged control changes; check the result is identical",
		Long: `replay starts a new run with RUN's configuration (and, for a fork, from the
same parent checkpoint), applies every control change RUN logged at the step
it took effect, and compares the two: the final summary and the last
evaluation must be identical. Exit code 1 if they differ.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return replayRun(cmd.Context(), cmd.OutOrStdout(), runs.Root(root), args[0], startOpts{root: root, quiet: quiet})
		},
	}
	addRunsFlag(cmd, &root)
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", true, "print only the final table and the comparison")
	return cmd
}

func replayRun(ctx context.Context, w io.Writer, root, id string, o startOpts) error {
	orig, h, err := openHistory(root, id)
	if err != nil {
		return err
	}
	if h.Final == nil {
		return badInput("run %s has not ended (status %s): resume it first", orig.Meta.ID, orig.EffectiveStatus())
	}
	c, err := runConfig(orig)
	if err != nil {
		return err
	}
	c.Name = "replay-of-" + orig.Meta.ID
	useRunBLAS(w, orig.Meta)
	start := 0
	if orig.Meta.Parent != "" {
		parent, err := openRun(root, orig.Meta.Parent)
		if err != nil {
			return fmt.Errorf("replaying fork %s: %w", orig.Meta.ID, err)
		}
		step := orig.Meta.ParentStep
		var state []byte
		if orig.Meta.ParentBest {
			if state, err = parent.BestCheckpointAt(step); err != nil {
				return fmt.Errorf("replaying fork %s: %w", orig.Meta.ID, err)
			}
		} else if got, b, err := parent.LatestCheckpointAtOrBefore(step); err != nil || got != step {
			return fmt.Errorf("replaying fork %s: parent %s has no checkpoint at step %d", orig.Meta.ID, parent.Meta.ID, step)
		} else {
			state = b
		}
		o.parent, o.parentStep, o.parentBest, o.state, start = parent.Meta.ID, step, orig.Meta.ParentBest, state, step
	}
	o.controls = h.Replayable(start-1, true)
	var newID string
	o.created = func(id string) { newID = id }
	if err := startRun(ctx, w, c, o); err != nil {
		return err
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

func newExportHeadCmd() *cobra.Command {
	var root, out string
	var step int
	var best bool
	cmd := &cobra.Command{
		Use:   "export-head RUN --out FILE.npz|FILE.npy [--step STEP | --best]",
		Short: "Write the fine-tuned head W (d×K) and b (K) of a run",
		Long: `export-head writes the head of RUN's last checkpoint (or the one at or before
--step, or with --best the best checkpoint: the model at the best validation
ψ of the optimized objective) in the layout heads are imported in: W of shape (d, K) and b of
shape (K,), float64. FILE.npz holds both as arrays W and b; FILE.npy writes
the pair FILE_W.npy and FILE_b.npy. In PyTorch:
    lin.weight.data = torch.from_numpy(W.T); lin.bias.data = torch.from_numpy(b)`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("step") && step < 0 {
				return badInput("--step %d: want a step ≥ 0 (leave --step out for the latest checkpoint)", step)
			}
			if best && cmd.Flags().Changed("step") {
				return badInput("--best and --step %d: give one (--best is the best checkpoint, --step the one at or before a step)", step)
			}
			return exportHead(cmd.OutOrStdout(), runs.Root(root), args[0], ckptSel{step, best}, out)
		},
	}
	addRunsFlag(cmd, &root)
	cmd.Flags().StringVar(&out, "out", "", "output `FILE` (.npz, or .npy for a W/b pair)")
	cmd.Flags().IntVar(&step, "step", -1, "export the checkpoint at or before `STEP` (default: the latest)")
	cmd.Flags().BoolVar(&best, "best", false, "export the best checkpoint (best validation ψ of the optimized objective)")
	cmd.MarkFlagRequired("out")
	return cmd
}

// checkpointAt is r's checkpoint that at selects: its best, or its newest
// valid one at or before a step (a negative step: the latest). Damaged
// newer ones are passed over, and w is told so in one line naming each; a
// run with none there is an input error (wrapping runs.ErrNoBest,
// runs.ErrNoCheckpoint, or runs.ErrDamaged naming the damaged files).
func checkpointAt(w io.Writer, r *runs.Run, at ckptSel) (int, []byte, error) {
	if at.best {
		step, state, err := r.BestCheckpoint()
		if errors.Is(err, runs.ErrNoBest) {
			return 0, nil, usageError{err}
		}
		return step, state, err
	}
	step := at.step
	if step < 0 {
		step = math.MaxInt
	}
	got, state, skipped, err := r.LatestValidCheckpoint(step, func(b []byte) error {
		_, err := local.ParseCheckpoint(b)
		return err
	})
	if errors.Is(err, runs.ErrNoCheckpoint) {
		return 0, nil, usageError{err}
	}
	if err != nil {
		return 0, nil, err
	}
	if len(skipped) > 0 {
		msgs := make([]string, len(skipped))
		for i, s := range skipped {
			msgs[i] = s.String()
		}
		fmt.Fprintf(w, "damaged checkpoint %s: using the one at step %d\n", strings.Join(msgs, "; "), got)
	}
	return got, state, nil
}

func exportHead(w io.Writer, root, id string, sel ckptSel, out string) error {
	r, err := openRun(root, id)
	if err != nil {
		return err
	}
	at, state, err := checkpointAt(w, r, sel)
	if err != nil {
		return err
	}
	which := fmt.Sprintf("step %d", at)
	if sel.best {
		which = fmt.Sprintf("best checkpoint (step %d)", at)
	}
	ck, err := local.ParseCheckpoint(state)
	if err != nil {
		return fmt.Errorf("%s: checkpoint at step %d: %w", r.Dir, at, err)
	}
	W, b := ck.Trainer.W, ck.Trainer.B
	d, K := ck.D, ck.K
	arrays := []npy.Entry{{Name: "W", Shape: []int{d, K}, Data: W}, {Name: "b", Shape: []int{K}, Data: b}}
	switch ext := filepath.Ext(out); ext {
	case ".npz":
		if err := npy.WriteNPZ(out, arrays...); err != nil {
			return err
		}
		fmt.Fprintf(w, "wrote %s: W (%d×%d), b (%d) from run %s %s\n", out, d, K, K, r.Meta.ID, which)
	case ".npy":
		stem := strings.TrimSuffix(out, ext)
		for _, a := range arrays {
			p := stem + "_" + a.Name + ".npy"
			if err := npy.WriteFile(p, a.Shape, a.Data); err != nil {
				return err
			}
			fmt.Fprintf(w, "wrote %s (%v)\n", p, a.Shape)
		}
	default:
		return badInput("--out %q: want a .npz or .npy file name", out)
	}
	return nil
}

package train_test

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"selmix/core/data"
	"selmix/core/gain"
	"selmix/core/local"
	"selmix/core/local/localtest"
	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/core/model"
	"selmix/core/train"
)

// toySplit is the toy problem (localtest.Split).
func toySplit(K, dim, n1 int, seed uint64) *data.Split { return localtest.Split(K, dim, n1, seed) }

func toyNet(t *testing.T, sp *data.Split, batch int) *model.Net {
	t.Helper()
	net := toyNetF(sp, batch)
	if net == nil {
		t.Fatal("toy model rejected")
	}
	return net
}

func toyNetF(sp *data.Split, batch int) *model.Net {
	net, err := localtest.Net(sp, batch)
	if err != nil {
		return nil
	}
	return net
}

func toyConfig() loop.Config {
	c := loop.DefaultConfig()
	c.Batch, c.Refresh, c.LR, c.Steps = 16, 10, 0.05, 60
	return c
}

// toySeed seeds the toy runs' samplers.
const toySeed = 11

func toyLocal(t *testing.T, sp *data.Split, batch int) *local.Local {
	t.Helper()
	l, err := local.New(toyNet(t, sp, batch), sp, toySeed)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// resumeToy resumes a toy run from checkpoint bytes, as the CLI does.
func resumeToy(cfg loop.Config, sp *data.Split, b []byte) (*train.Engine, error) {
	ck, err := local.ParseCheckpoint(b)
	if err != nil {
		return nil, err
	}
	tr, err := local.Load(sp, ck.Trainer)
	if err != nil {
		return nil, err
	}
	return train.Resume(cfg, tr, ck)
}

type runResult struct {
	sum    *loop.Summary
	events []loop.Snapshot
	params []model.Param
}

func runToy(t *testing.T, cfg loop.Config, controls []loop.Control) runResult {
	return runToyWith(t, cfg, controls, toySeed, 0)
}

// runToyWith runs the toy problem with a sampling seed and, if chunk > 0,
// runs of exactly chunk steps between boundaries.
func runToyWith(t *testing.T, cfg loop.Config, controls []loop.Control, seed uint64, chunk int) runResult {
	t.Helper()
	sp := toySplit(4, 6, 90, 1)
	tr, err := local.New(toyNet(t, sp, cfg.Batch), sp, seed)
	if err != nil {
		t.Fatal(err)
	}
	net := tr.Net()
	e, err := train.New(cfg, tr)
	if err != nil {
		t.Fatal(err)
	}
	train.SetPace(e, chunk)
	st := e.Subscribe()
	for _, c := range controls {
		e.Send(c)
	}
	done := make(chan []loop.Snapshot)
	go func() {
		var ev []loop.Snapshot
		for {
			s, ok := st.Next(context.Background())
			if !ok {
				done <- ev
				return
			}
			if s.Kind != loop.KindStep {
				ev = append(ev, s)
			}
		}
	}()
	sum, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return runResult{sum, <-done, net.Params()}
}

func TestEngineDeterministic(t *testing.T) {
	ctl := []loop.Control{
		{Op: loop.OpSet, Key: "s", Value: "2", At: 15},
		{Op: loop.OpSet, Key: "objective", Value: "hmean", At: 25},
		{Op: loop.OpSet, Key: "batch", Value: "8", At: 33},
		{Op: loop.OpSet, Key: "policy", Value: "uniform", At: 47},
	}
	a := runToy(t, toyConfig(), ctl)
	b := runToy(t, toyConfig(), ctl)
	a.sum.Seconds, b.sum.Seconds = 0, 0
	if !reflect.DeepEqual(a.sum, b.sum) {
		t.Errorf("same seed and controls, different summaries:\n%+v\n%+v", a.sum, b.sum)
	}
	if !reflect.DeepEqual(a.params, b.params) {
		t.Error("same seed and controls, different final weights")
	}
	c := runToyWith(t, toyConfig(), ctl, toySeed+1, 0)
	if reflect.DeepEqual(a.params, c.params) {
		t.Error("different sampling seed gave identical weights")
	}
	// Every control is acknowledged at exactly its step.
	acks := map[string]int{}
	for _, s := range a.events {
		if s.Kind == loop.KindControl && s.Ack != nil {
			if s.Ack.Err != "" {
				t.Errorf("control %v refused: %s", s.Ack.Control, s.Ack.Err)
			}
			acks[s.Ack.Control.String()] = s.Ack.Step
			if s.Step != s.Ack.Step {
				t.Errorf("ack snapshot at step %d for control at %d", s.Step, s.Ack.Step)
			}
		}
	}
	for _, c := range ctl {
		if got, ok := acks[c.String()]; !ok || got != c.At {
			t.Errorf("control %v acknowledged at %d (seen %v), want %d", c, got, ok, c.At)
		}
	}
	// A changed hyperparameter is visible in the following snapshots.
	var last loop.Snapshot
	for _, s := range a.events {
		if s.Kind == loop.KindFinal {
			last = s
		}
	}
	if last.Hyper.S != 2 || last.Hyper.Objective != metric.HMean || last.Hyper.Batch != 8 || last.Hyper.Policy != gain.Uniform {
		t.Errorf("final hyperparameters %+v do not reflect the controls", last.Hyper)
	}
	if last.Summary == nil || last.Summary.Steps != 60 || last.State != loop.Finished {
		t.Errorf("final snapshot %+v", last)
	}
}

func TestEngineRefreshes(t *testing.T) {
	r := runToy(t, toyConfig(), nil)
	var steps []int
	for _, s := range r.events {
		if s.Kind == loop.KindRefresh {
			steps = append(steps, s.Step)
			rs := s.Refresh
			if len(rs.G) != 16 || len(rs.P) != 16 || len(rs.Objectives) != len(metric.Objectives()) || len(rs.Lambda) != 4 {
				t.Fatalf("refresh at %d: |G|=%d |P|=%d |obj|=%d |λ|=%d", s.Step, len(rs.G), len(rs.P), len(rs.Objectives), len(rs.Lambda))
			}
			sum := 0.0
			for i, p := range rs.P {
				sum += p
				if p > 0 && rs.G[i] <= 0 {
					t.Errorf("step %d: P[%d]=%v on a non-positive gain", s.Step, i, p)
				}
			}
			if sum < 1-1e-9 || sum > 1+1e-9 {
				t.Errorf("step %d: P sums to %v", s.Step, sum)
			}
		}
	}
	want := []int{0, 10, 20, 30, 40, 50, 60}
	if !reflect.DeepEqual(steps, want) {
		t.Errorf("refreshes at %v, want %v", steps, want)
	}
}

func TestEngineRefusedControl(t *testing.T) {
	r := runToy(t, toyConfig(), []loop.Control{{Op: loop.OpSet, Key: "s", Value: "-3", At: 5}, {Op: loop.OpSet, Key: "warp", Value: "9", At: 6}})
	refused := 0
	for _, s := range r.events {
		if s.Kind == loop.KindControl && s.Ack != nil && s.Ack.Err != "" {
			refused++
		}
		if s.Kind == loop.KindFinal && s.Hyper.S != 10 {
			t.Errorf("refused control changed s to %v", s.Hyper.S)
		}
	}
	if refused != 2 {
		t.Errorf("%d refused acks, want 2", refused)
	}
}

// Pause holds the run; a single step runs exactly to the next refresh and
// pauses again; resume finishes; stop ends early with a summary.
func TestEnginePauseStepStop(t *testing.T) {
	sp := toySplit(3, 5, 60, 2)
	cfg := toyConfig()
	cfg.Steps = 1000
	e, err := train.New(cfg, toyLocal(t, sp, cfg.Batch))
	if err != nil {
		t.Fatal(err)
	}
	st := e.Subscribe()
	e.Send(loop.Control{Op: loop.OpPause, At: 5})
	type res struct {
		sum *loop.Summary
		err error
	}
	done := make(chan res, 1)
	go func() {
		s, err := e.Run(context.Background())
		done <- res{s, err}
	}()
	next := func(kind loop.Kind) loop.Snapshot {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for {
			s, ok := st.Next(ctx)
			if !ok {
				t.Fatalf("stream ended waiting for %v", kind)
			}
			if s.Kind == kind {
				return s
			}
		}
	}
	if s := next(loop.KindControl); s.Ack.Control.Op != loop.OpPause || s.Step != 5 || s.State != loop.Paused {
		t.Fatalf("pause: %+v", s)
	}
	// A viewer that joins now starts with where the run stands: paused.
	late := e.Subscribe()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	if s, ok := late.Next(ctx); !ok || s.Kind != loop.KindStep || s.State != loop.Paused || s.Step != 5 || s.Ack != nil {
		t.Fatalf("a late subscriber's first snapshot: %v %s at %d (ack %v), want a step snapshot, paused at 5", s.Kind, s.State, s.Step, s.Ack)
	}
	cancel()
	e.Unsubscribe(late)
	e.Send(loop.Control{Op: loop.OpStep})
	next(loop.KindControl) // the step's ack
	// Runs to the refresh at 10, then pauses again.
	if s := next(loop.KindControl); s.State != loop.Paused || s.Step != 10 {
		t.Fatalf("after single step: state %s at %d, want paused at 10", s.State, s.Step)
	}
	e.Send(loop.Control{Op: loop.OpStop})
	r := <-done
	if r.err != train.ErrStopped || r.sum == nil || r.sum.Steps != 10 {
		t.Fatalf("stop: err %v, summary %+v", r.err, r.sum)
	}
}

// Where runs of steps begin and end (the pacer's choice, which depends on
// the machine's speed) must not change anything a run computes.
func TestChunkingInvariant(t *testing.T) {
	ctl := []loop.Control{{Op: loop.OpSet, Key: "s", Value: "2", At: 15}, {Op: loop.OpSet, Key: "batch", Value: "8", At: 33}}
	want := runToyWith(t, toyConfig(), ctl, toySeed, 1)
	for _, chunk := range []int{3, 7, 1000} {
		got := runToyWith(t, toyConfig(), ctl, toySeed, chunk)
		got.sum.Seconds, want.sum.Seconds = 0, 0
		if !reflect.DeepEqual(got.sum, want.sum) || !reflect.DeepEqual(got.params, want.params) {
			t.Errorf("runs of %d steps: result differs from single steps", chunk)
		}
		if !reflect.DeepEqual(eventKeys(got.events), eventKeys(want.events)) {
			t.Errorf("runs of %d steps: events differ\n got %v\nwant %v", chunk, eventKeys(got.events), eventKeys(want.events))
		}
	}
}

func eventKeys(evs []loop.Snapshot) []string {
	var out []string
	for _, s := range evs {
		k := fmt.Sprintf("%v@%d", s.Kind, s.Step)
		if s.Ack != nil {
			k += " " + s.Ack.Control.Tagged() // its source too: a resume keeps it
		}
		if r := s.Refresh; r != nil {
			k += fmt.Sprintf(" psi=%v", r.Psi)
			if r.Predicted != nil {
				k += fmt.Sprintf(" pred=%v real=%v", *r.Predicted, *r.Realised)
			}
		}
		out = append(out, k)
	}
	return out
}

// Every refresh after the first carries the interval's predicted and
// realised change of ψ; a run without mixup (policies none, resample)
// predicts nothing.
func TestRefreshCarriesPrediction(t *testing.T) {
	for _, policy := range []string{"selmix", "none", "resample"} {
		cfg := toyConfig()
		cfg.Hyper.Policy = gain.Policy(policy)
		r := runToy(t, cfg, nil)
		n := 0
		for _, s := range r.events {
			if s.Kind != loop.KindRefresh {
				continue
			}
			n++
			has := s.Refresh.Predicted != nil && s.Refresh.Realised != nil
			if want := n > 1 && policy == "selmix"; has != want {
				t.Errorf("policy %s, refresh %d at step %d: prediction present %v, want %v", policy, n, s.Step, has, want)
			}
			if has && !(*s.Refresh.Predicted > 0) {
				t.Errorf("refresh at %d: SelMix predicts %v; its P holds positive gains only", s.Step, *s.Refresh.Predicted)
			}
		}
	}
}

// Adaptation never takes the interval or the learning rate beyond what
// the researcher set, nor below its floor; every change it makes is an
// automatic control at a refresh.
func TestAdaptBounds(t *testing.T) {
	for _, adapt := range []loop.Adapt{loop.AdaptRefresh, loop.AdaptLR} {
		cfg := toyConfig()
		cfg.Adapt = adapt
		r := runToy(t, cfg, nil)
		n := 0
		for _, s := range r.events {
			if s.Ack == nil || !s.Ack.Control.Auto() {
				continue
			}
			n++
			h := s.Hyper
			switch adapt {
			case loop.AdaptRefresh:
				if h.Refresh < max(1, cfg.Refresh/10) || h.Refresh > cfg.Refresh {
					t.Errorf("refresh set to %d, outside [%d, %d]", h.Refresh, max(1, cfg.Refresh/10), cfg.Refresh)
				}
			case loop.AdaptLR:
				if h.LR < cfg.LR*train.LRFloor*0.999 || h.LR > cfg.LR {
					t.Errorf("lr set to %v, outside [%v, %v]", h.LR, cfg.LR*train.LRFloor, cfg.LR)
				}
			}
		}
		if n == 0 {
			t.Errorf("adapt %s changed nothing", adapt)
		}
	}
}

// aheadRecorder records where each run of steps starts, its length and
// the steps it says will follow with the same settings.
type aheadRecorder struct {
	train.Trainer
	step int
	got  [][3]int // start, steps, ahead
}

func (r *aheadRecorder) Train(q *train.TrainRequest) (float64, error) {
	r.got = append(r.got, [3]int{r.step, len(q.LR), q.Ahead})
	r.step += len(q.LR)
	return r.Trainer.Train(q)
}

// Each run of steps says how many more follow with the same P: up to the
// next refresh, the next scheduled control or the end.
func TestTrainRequestAhead(t *testing.T) {
	cfg := toyConfig()
	cfg.Steps = 25 // refresh 10: the last interval is cut short by the end
	sp := toySplit(4, 6, 90, 1)
	rec := &aheadRecorder{Trainer: toyLocal(t, sp, cfg.Batch)}
	e, err := train.New(cfg, rec)
	if err != nil {
		t.Fatal(err)
	}
	train.SetPace(e, 4)
	e.Send(loop.Control{Op: loop.OpSet, Key: "s", Value: "2", At: 13})
	if _, err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := [][3]int{
		{0, 4, 6}, {4, 4, 2}, {8, 2, 0}, // refresh at 10
		{10, 3, 0},             // the control at 13 recomputes P
		{13, 4, 3}, {17, 3, 0}, // refresh at 20
		{20, 4, 1}, {24, 1, 0}, // the end at 25
	}
	if !reflect.DeepEqual(rec.got, want) {
		t.Errorf("runs of steps (start, steps, ahead)\n got %v\nwant %v", rec.got, want)
	}
}

// The coverage margin from the validation size: the engine's multipliers
// at a refresh are those of α/K + δ_j with δ_j from the trainer's
// validation count (what a worker reports as well) and that refresh's C,
// and ψ is the paper's at those stricter aims; the reported values of
// every objective keep α/K.
func TestCovMarginAutoUsesValidationSize(t *testing.T) {
	cfg := toyConfig()
	// τ = 1: multipliers far from saturation, so each depends on the aim.
	cfg.Objective, cfg.CovMargin, cfg.CovConf, cfg.Alpha, cfg.Tau, cfg.Steps = metric.MeanRecallCov, loop.MarginAuto, 0.9, 0.8, 1.0, 20
	sp := toySplit(4, 6, 90, 1)
	tr := toyLocal(t, sp, cfg.Batch)
	n := tr.Info().Val
	ev0, err := tr.Evaluate(train.SplitVal, false) // the model step 0 refreshes
	if err != nil {
		t.Fatal(err)
	}
	p := metric.Params{Alpha: 0.8, Tau: 1, Conf: 0.9, N: n}
	want, err := metric.Evaluate(metric.MeanRecallCov, ev0.C, nil, p)
	if err != nil {
		t.Fatal(err)
	}
	p.N = 4 * n // a validation set 4× larger: smaller margins
	other, err := metric.Evaluate(metric.MeanRecallCov, ev0.C, nil, p)
	if err != nil {
		t.Fatal(err)
	}
	r := runToy(t, cfg, nil)
	seen := 0
	for _, s := range r.events {
		rf := s.Refresh
		if s.Kind != loop.KindRefresh || rf == nil {
			continue
		}
		seen++
		if rf.Step == 0 {
			between := 0 // multipliers that depend on the validation size
			for j := range want.Lambda {
				if want.Lambda[j] != other.Lambda[j] {
					between++
				}
				if math.Abs(rf.Lambda[j]-want.Lambda[j]) > 1e-9 {
					t.Errorf("step 0: λ[%d] = %v, want %v (from %d validation samples)", j, rf.Lambda[j], want.Lambda[j], n)
				}
			}
			if math.Abs(rf.Psi-want.Psi) > 1e-12 || between == 0 {
				t.Errorf("step 0: ψ %v, want %v; %d multipliers depend on the validation size", rf.Psi, want.Psi, between)
			}
			if got := metric.MeanRecallCov.In(rf.Objectives); math.Abs(got-rf.Psi) < 1e-12 {
				t.Errorf("step 0: reported ψ@cov %v equals the optimized ψ %v though the aims are above α/K", got, rf.Psi)
			}
		}
	}
	if seen == 0 || n == 0 {
		t.Fatalf("%d refreshes, %d validation samples: the test says nothing", seen, n)
	}
}

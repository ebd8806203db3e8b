package train_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"selmix/core/gain"
	"selmix/core/local"
	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/core/model"
	"selmix/core/train"
)

// TestSamplesFormResumeEqualsUninterrupted: a run under the samples gain
// form with multipliers that remember, resumed from any checkpoint —
// including one after a control recomputed G from the stored samples —
// ends exactly as the uninterrupted run, and the form and the memory
// change what it does.
func TestSamplesFormResumeEqualsUninterrupted(t *testing.T) {
	sp := toySplit(4, 6, 90, 1)
	cfg := toyConfig()
	cfg.Form, cfg.Memory, cfg.Draws, cfg.Seed = gain.Samples, loop.MemoryIntegral, 3, 5
	cfg.Objective = metric.MeanRecallCov
	cfg.Plugin = true
	ctl := []loop.Control{{Op: loop.OpSet, Key: "s", Value: "3", At: 25}}
	run := func(cfg loop.Config) (*loop.Summary, []model.Param, map[int][]byte) {
		e, err := train.New(cfg, toyLocal(t, sp, cfg.Batch))
		if err != nil {
			t.Fatal(err)
		}
		ckpts := map[int][]byte{}
		e.SetCheckpointer(1, func(step int, b []byte, final bool) error {
			if !final {
				ckpts[step] = b
			}
			return nil
		})
		for _, c := range ctl {
			e.Send(c)
		}
		sum, err := e.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return sum, e.Trainer().(*local.Local).Net().Params(), ckpts
	}
	want, wantParams, ckpts := run(cfg)
	if want.PluginBefore == nil || want.PluginAfter == nil || want.PluginAfter.Objective != cfg.Objective {
		t.Fatalf("the plug-in was not measured: before %+v, after %+v", want.PluginBefore, want.PluginAfter)
	}
	for _, step := range []int{10, 30, 50} {
		r, err := resumeToy(cfg, sp, ckpts[step])
		if err != nil {
			t.Fatalf("resume at %d: %v", step, err)
		}
		for _, c := range ctl {
			if c.At >= step {
				r.Send(c)
			}
		}
		got, err := r.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got.Seconds, want.Seconds = 0, 0
		if !reflect.DeepEqual(got, want) {
			t.Errorf("resumed at %d: summary differs\n got %+v\nwant %+v", step, got, want)
		}
		if !reflect.DeepEqual(r.Trainer().(*local.Local).Net().Params(), wantParams) {
			t.Errorf("resumed at %d: final weights differ", step)
		}
	}
	// The memory acts: some coverage multiplier exceeds what C alone gives.
	var remembered bool
	for _, s := range runToy(t, cfg, ctl).events {
		if s.Kind != loop.KindRefresh {
			continue
		}
		r := s.Refresh
		for j, l := range metric.Multipliers(cfg.Objective, r.Report, nil, cfg.Hyper.Params(4, 0)) {
			remembered = remembered || r.Lambda[j] > l+1e-9
		}
	}
	if !remembered {
		t.Error("no coverage multiplier ever exceeded its memoryless value")
	}
	paper := cfg
	paper.Form = gain.Paper
	if p, _, _ := run(paper); reflect.DeepEqual(p.TestAfter, want.TestAfter) {
		t.Error("the samples form ends where the paper's does: it changed nothing")
	}
}

// onlyTrainer hides a trainer's features, as a worker without the
// request does.
type onlyTrainer struct{ train.Trainer }

// TestSamplesFormNeedsFeatures: a trainer that cannot give features is
// refused the samples form before the run starts, naming the key.
func TestSamplesFormNeedsFeatures(t *testing.T) {
	sp := toySplit(4, 6, 90, 1)
	cfg := toyConfig()
	cfg.Form = gain.Samples
	_, err := train.New(cfg, onlyTrainer{toyLocal(t, sp, cfg.Batch)})
	if err == nil || !strings.Contains(err.Error(), "finetune.form = samples") || !errors.Is(err, train.ErrNoFeatures) {
		t.Fatalf("New with a trainer without features: %v", err)
	}
	cfg.Form = gain.Paper
	if _, err := train.New(cfg, onlyTrainer{toyLocal(t, sp, cfg.Batch)}); err != nil {
		t.Fatalf("the paper form needs no features: %v", err)
	}
}

// Package sweeptest helps tests that work on sweeps: the store's own tests
// (runs/sweep) and the executors' (app/sweepexec) create their sweeps the
// same way.
package sweeptest

import (
	"path/filepath"
	"testing"

	"selmix/core/search"
	"selmix/runs/sweep"
)

// SmallSpec is a sweep of six members: two policies by three seeds, 100
// fine-tuning steps each.
const SmallSpec = `
name = "small"
[base]
"finetune.steps" = 100
[axes]
"finetune.policy" = ["selmix", "uniform"]
seed = [1, 2, 3]
`

// New plans and creates a sweep of spec text, run by executor, under a
// fresh temp runs root that is also its working directory.
func New(t testing.TB, text, executor string) *sweep.Sweep {
	t.Helper()
	spec, err := search.Parse([]byte(text), filepath.Join(t.TempDir(), "spec.toml"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	s, err := sweep.Plan(root, spec, executor, root)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Create(spec, []byte(text)); err != nil {
		t.Fatal(err)
	}
	return s
}

// NewASHA is New for a successive-halving sweep (sweep --search asha):
// the spec's [asha] table, or its defaults, planned over its members.
func NewASHA(t testing.TB, text string) *sweep.Sweep {
	t.Helper()
	return newSearch(t, text, func(spec *search.Spec, s *sweep.Sweep) (err error) {
		s.ASHA, err = search.PlanASHA(spec, s.Members)
		return err
	})
}

// NewPBT is New for a population (sweep --search pbt): the spec's [pbt]
// table, or its defaults, planned over its members.
func NewPBT(t testing.TB, text string) *sweep.Sweep {
	t.Helper()
	return newSearch(t, text, func(spec *search.Spec, s *sweep.Sweep) (err error) {
		s.PBT, err = search.PlanPBT(spec, s.Members)
		return err
	})
}

// newSearch is a created local sweep of text whose search plan sets.
func newSearch(t testing.TB, text string, plan func(*search.Spec, *sweep.Sweep) error) *sweep.Sweep {
	t.Helper()
	spec, err := search.Parse([]byte(text), filepath.Join(t.TempDir(), "spec.toml"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	s, err := sweep.Plan(root, spec, search.ExecLocal, root)
	if err != nil {
		t.Fatal(err)
	}
	if err := plan(spec, s); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(spec, []byte(text)); err != nil {
		t.Fatal(err)
	}
	return s
}

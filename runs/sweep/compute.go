package sweep

import (
	"strings"

	"selmix/core/loop"
)

// PopulationSteps are the fine-tuning steps a population spent, against
// the two grids it stands for: one that runs each setting it tried to
// its end, and the spec's (each member to its end).
type PopulationSteps struct {
	// Spent is what its members' runs trained: each run of each lineage
	// from its start (a fork from its fork step) to where it stands.
	Spent int
	// Settings is how many distinct settings of the explored keys it
	// tried: its first members' and its forks'.
	Settings int
	Members  int
	Steps    int // finetune.steps
}

// Tried is the steps of a grid that runs each setting the population
// tried to its end.
func (p PopulationSteps) Tried() int { return p.Settings * p.Steps }

// Grid is the steps of the spec's grid: each member run to its end.
func (p PopulationSteps) Grid() int { return p.Members * p.Steps }

// PopulationSteps counts the steps population po spent and the distinct
// settings it tried (PopulationSteps).
func (s *Sweep) PopulationSteps(po *Population) (PopulationSteps, error) {
	byName, err := s.Runs()
	if err != nil {
		return PopulationSteps{}, err
	}
	st := PopulationSteps{Members: len(s.Members), Steps: s.PBT.Steps}
	tried := map[string]bool{}
	key := func(h loop.Hyper) string {
		vals := make([]string, len(s.PBT.Keys))
		for k, name := range s.PBT.Keys {
			vals[k], _ = h.Get(name)
		}
		return strings.Join(vals, "\x00")
	}
	for i := range s.Members {
		c, err := s.Config(i)
		if err != nil {
			return PopulationSteps{}, err
		}
		tried[key(c.Finetune.Hyper)] = true
		for _, name := range po.Lineage(i) {
			r, err := pickNamed(i, name, byName)
			if err != nil {
				return PopulationSteps{}, err
			}
			if r == nil {
				continue
			}
			start := 0
			if r.Meta.Parent != "" {
				start = r.Meta.ParentStep
			}
			st.Spent += max(0, r.Meta.Steps-start)
		}
	}
	for _, d := range po.Decisions {
		if d.Op != PBTExploit {
			continue
		}
		// Sets names every explored key (check refuses any other), so
		// they are the fork's settings whatever it copied; each value
		// goes through Hyper to read as a member's does.
		h := loop.DefaultHyper()
		for _, kv := range d.Sets {
			if k, v, ok := strings.Cut(strings.TrimPrefix(kv, "finetune."), "="); ok {
				_ = h.Set(k, v)
			}
		}
		tried[key(h)] = true
	}
	st.Settings = len(tried)
	return st, nil
}

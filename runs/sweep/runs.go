package sweep

import (
	"fmt"
	"slices"
	"strings"

	"selmix/runs"
)

// Runs maps run names to the runs of the sweep's root that carry them
// (a name can be shared: the slice has them all).
func (s *Sweep) Runs() (map[string][]*runs.Run, error) {
	all, err := runs.List(s.Root)
	if err != nil {
		return nil, err
	}
	prefix := s.ID + "-"
	out := map[string][]*runs.Run{}
	for i := range all {
		r := &all[i]
		if strings.HasPrefix(r.Meta.Name, prefix) {
			out[r.Meta.Name] = append(out[r.Meta.Name], r)
		}
	}
	return out, nil
}

// Run is member i's run, nil if it has not started; more than one run
// with its name is an error naming them.
func (s *Sweep) Run(i int) (*runs.Run, error) {
	rs, err := s.Runs()
	if err != nil {
		return nil, err
	}
	return s.pick(i, rs)
}

func (s *Sweep) pick(i int, rs map[string][]*runs.Run) (*runs.Run, error) {
	name := s.Members[i].Run
	if s.PBT != nil {
		// A population's member continues in its last exploit's fork.
		po, err := s.Population()
		if err != nil {
			return nil, err
		}
		name = po.RunName(i)
	}
	return pickNamed(i, name, rs)
}

// runNamed is the run named name under the sweep's runs root, nil if
// none.
func (s *Sweep) runNamed(name string) (*runs.Run, error) {
	rs, err := s.Runs()
	if err != nil {
		return nil, err
	}
	return pickNamed(-1, name, rs)
}

func pickNamed(i int, name string, rs map[string][]*runs.Run) (*runs.Run, error) {
	switch got := rs[name]; len(got) {
	case 0:
		return nil, nil
	case 1:
		return got[0], nil
	default:
		var ids []string
		for _, r := range got {
			ids = append(ids, r.Meta.ID)
		}
		slices.Sort(ids)
		return nil, fmt.Errorf("%d runs are named %s (%s); keep one (selmix runs rm)", len(got), name, strings.Join(ids, ", "))
	}
}

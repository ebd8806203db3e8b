package search

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"selmix/core/experiment"
	"selmix/core/metric"
)

// Searches: how a sweep spends its steps on its members.
const (
	Grid              = "grid" // every member runs to its end
	SuccessiveHalving = "asha" // asynchronous successive halving (Li et al., MLSys 2020)
)

// ASHASpec is a spec's [asha] table; nil fields take their defaults.
type ASHASpec struct {
	// MinSteps is the first rung, in steps (default: finetune.steps / η²,
	// rounded up: three rungs).
	MinSteps *int `toml:"min_steps"`
	// Eta is the reduction factor η: each rung is η times the one below,
	// and promotes the top 1/η of the members that reached it (default 3).
	Eta *int `toml:"eta"`
	// Metric is the objective whose validation ψ ranks the members
	// (default: the one they optimize, which must then be the same for
	// all).
	Metric *string `toml:"metric"`
	// Align is where a member is ranked for a rung: common (the default)
	// at the rung rounded up to a refresh of every member, so all are
	// ranked after as many steps; member at the rung rounded up to its
	// own next refresh, so members that refresh less often are ranked
	// later, after more steps.
	Align *string `toml:"align"`
}

// Rung alignments.
const (
	AlignCommon = "common"
	AlignMember = "member"
)

// DefaultEta is [asha] eta's default.
const DefaultEta = 3

// check validates what the table says by itself; PlanASHA checks it
// against the members.
func (a *ASHASpec) check() error {
	if a.MinSteps != nil && *a.MinSteps < 1 {
		return fmt.Errorf("min_steps %d: want a number of steps ≥ 1", *a.MinSteps)
	}
	if a.Eta != nil && *a.Eta < 2 {
		return fmt.Errorf("eta %d: want an integer ≥ 2 (each rung keeps 1/eta of the members)", *a.Eta)
	}
	if err := checkRankMetric(a.Metric); err != nil {
		return err
	}
	if a.Align != nil && *a.Align != AlignCommon && *a.Align != AlignMember {
		return fmt.Errorf("align %q: want common (every member ranked at the same step) or member (at its own next refresh)", *a.Align)
	}
	return nil
}

// ASHA is a sweep's successive-halving plan (sweep.json's "asha"): its
// rungs, and where each member stops for each.
type ASHA struct {
	MinSteps int `json:"min_steps"`
	Eta      int `json:"eta"`
	// Metric is the objective whose validation ψ ranks the members; ""
	// ranks each by the one it optimizes (the same for all).
	Metric string `json:"metric,omitempty"`
	// Align is the rungs' alignment (AlignCommon or AlignMember; "" in
	// plans made before it: member).
	Align string `json:"align,omitempty"`
	// Rungs are the step budgets: min_steps·η^k below finetune.steps,
	// then finetune.steps.
	Rungs []int `json:"rungs"`
	// Stops are, per member, the step of each rung's refresh: the rung
	// rounded up to a refresh of every member (common) or to the member's
	// next refresh (member), and finetune.steps for the last.
	Stops [][]int `json:"stops"`
}

// Top is the index of the last rung, the one run to the end.
func (a *ASHA) Top() int { return len(a.Rungs) - 1 }

// StopAt is the step at which member i's run stops for rung k, the stop
// its entry point is given (sweep member --stop-at), or 0 for the last
// rung, which runs to the end. A run stops one step past its rung's
// refresh: the engine takes a stop at a step before the refresh due
// there, and the rung is ranked by that refresh. The step belongs to the
// next rung's budget; a run resumed from the stop continues exactly.
func (a *ASHA) StopAt(i, k int) int {
	if k >= a.Top() {
		return 0
	}
	return a.Stops[i][k] + 1
}

// AlignText says where a rung is rounded up to, as reports say it.
func (a *ASHA) AlignText() string {
	if a.Align == AlignCommon {
		return "a refresh of every member"
	}
	return "each member's next refresh"
}

// MetricName is what ranks the members, as reports say it.
func (a *ASHA) MetricName() string {
	if a.Metric == "" {
		return "the optimized objective"
	}
	return a.Metric
}

// PlanASHA is the successive-halving plan of a sweep of spec's members as
// its [asha] table says (its defaults where it has none): every member a
// candidate, with the rungs and stops of ASHA. Errors are
// bad input naming the spec and the key.
func PlanASHA(spec *Spec, members []Member) (*ASHA, error) {
	as := spec.ASHA
	if as == nil {
		as = &ASHASpec{}
	}
	if err := as.check(); err != nil {
		return nil, fmt.Errorf("%s: [asha] %v", spec.File, err)
	}
	a := &ASHA{Eta: DefaultEta}
	if as.Eta != nil {
		a.Eta = *as.Eta
	}
	if as.Metric != nil {
		a.Metric, _ = RankMetric(*as.Metric) // checked
	}
	// The members' configurations as Plan validated them.
	steps, refresh := make([]int, len(members)), make([]int, len(members))
	objs := map[metric.Objective][]int{}
	for i, m := range members {
		c, err := experiment.Load(spec.BaseConfig, m.Sets)
		if err != nil {
			return nil, fmt.Errorf("%s: member %d: %v", spec.File, i, err)
		}
		steps[i], refresh[i] = c.Finetune.Steps, c.Finetune.Refresh
		objs[c.Finetune.Objective] = append(objs[c.Finetune.Objective], i)
	}
	if d := slices.Compact(slices.Sorted(slices.Values(steps))); len(d) > 1 {
		return nil, fmt.Errorf("%s: finetune.steps: the members run %s steps; successive halving gives every member one budget: set finetune.steps in [base]", spec.File, JoinInts(d, ", "))
	}
	if a.Metric == "" && len(objs) > 1 {
		var names []string
		for o := range objs {
			names = append(names, string(o))
		}
		slices.Sort(names)
		return nil, mixedObjectives(spec.File, "asha", names)
	}
	S := steps[0]
	a.MinSteps = (S + a.Eta*a.Eta - 1) / (a.Eta * a.Eta)
	if as.MinSteps != nil {
		a.MinSteps = *as.MinSteps
	}
	if a.MinSteps >= S {
		return nil, fmt.Errorf("%s: [asha] min_steps %d: want fewer than finetune.steps (%d)", spec.File, a.MinSteps, S)
	}
	for r := a.MinSteps; r < S; r *= a.Eta {
		a.Rungs = append(a.Rungs, r)
		if r > math.MaxInt/a.Eta {
			break
		}
	}
	a.Rungs = append(a.Rungs, S)
	a.Align = AlignCommon
	if as.Align != nil {
		a.Align = *as.Align
	}
	every := 1 // a refresh of every member: their least common multiple
	for _, r := range refresh {
		every = every / gcd(every, r) * r
	}
	a.Stops = make([][]int, len(members))
	for i := range members {
		st := make([]int, len(a.Rungs))
		at := refresh[i]
		if a.Align == AlignCommon {
			at = every
		}
		for k, r := range a.Rungs {
			st[k] = min(S, (r+at-1)/at*at)
			if k > 0 && st[k] <= st[k-1] {
				return nil, fmt.Errorf("%s: [asha] min_steps %d: member %d is ranked at refreshes %d steps apart, so its rungs %d and %d both end at step %d: want rungs a refresh apart (a larger min_steps or eta)",
					spec.File, a.MinSteps, i, at, a.Rungs[k-1], r, st[k-1])
			}
		}
		a.Stops[i] = st
	}
	return a, nil
}

// JoinInts joins integers with sep.
func JoinInts(xs []int, sep string) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, sep)
}

// Check holds the rules sweep.json's plan obeys: members are run to the
// steps it names.
func (a *ASHA) Check(members int) error {
	if a.Eta < 2 || len(a.Rungs) < 2 || len(a.Stops) != members || !rankMetricOK(a.Metric) {
		return errors.New("asha: malformed plan")
	}
	for k, r := range a.Rungs {
		if r < 1 || k > 0 && r <= a.Rungs[k-1] {
			return fmt.Errorf("asha: rungs %v do not increase", a.Rungs)
		}
	}
	for i, st := range a.Stops {
		if len(st) != len(a.Rungs) || st[len(st)-1] != a.Rungs[len(a.Rungs)-1] {
			return fmt.Errorf("asha: member %d's stops are malformed", i)
		}
		for k, x := range st {
			if x < 1 || k > 0 && x <= st[k-1] {
				return fmt.Errorf("asha: member %d's stops %v do not increase", i, st)
			}
		}
	}
	return nil
}

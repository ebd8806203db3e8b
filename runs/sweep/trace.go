package sweep

import (
	"fmt"
	"math"
	"strings"

	"selmix/core/loop"
	"selmix/runs"
	"selmix/runs/record"
)

// TracePoint is one point of a member's validation ψ over steps.
type TracePoint struct {
	Step int
	Run  string  // the name of the run whose refresh it is
	Psi  float64 // validation ψ the search ranks by (NaN where the refresh has none)
	// Hyper is the settings in force at the refresh; at the point where
	// the member switched to a copy, those it continues with (its fork's).
	Hyper loop.Hyper
	// Copied is, where the member switched to a copy, the member copied:
	// the point is that member's refresh its generation was ranked by
	// (its step and ψ, in run Run, the copied member's). -1 at the
	// member's own refreshes.
	Copied int
}

// Trace is one member of a search over steps: in a population, its
// lineage stitched at each fork (its own run up to the fork step, then
// the fork's refreshes, with the copied member's ranked refresh between
// as the point where it switched); in successive halving, its run up to
// where it stopped.
type Trace struct {
	Member   int
	Describe string // its first settings: "s=0.5 lr=0.01"
	Points   []TracePoint
	// Ended says it reached the end: a population's last generation, or
	// successive halving's last rung.
	Ended bool
}

// Last is the trace's last refresh of its own (NaN ψ where it has none).
func (t *Trace) Last() TracePoint {
	for k := len(t.Points) - 1; k >= 0; k-- {
		if t.Points[k].Copied < 0 {
			return t.Points[k]
		}
	}
	return TracePoint{Psi: math.NaN(), Copied: -1}
}

// Winner is the member of ts with the best final validation ψ (its last
// refresh's), among those that ended if any did; -1 where none has a ψ.
// Ties go to the first.
func Winner(ts []Trace) int {
	best, bestPsi, ended := -1, math.Inf(-1), false
	for _, t := range ts {
		psi := t.Last().Psi
		if math.IsNaN(psi) || (ended && !t.Ended) {
			continue
		}
		if (t.Ended && !ended) || psi > bestPsi {
			best, bestPsi, ended = t.Member, psi, ended || t.Ended
		}
	}
	return best
}

// rankPsi is the validation value a search ranks a refresh by: of metric
// by (RankSeries), else ψ of the objective the run optimized (as rankAt).
func rankPsi(rf *record.RefreshEvent, by string) float64 {
	if by != "" {
		return RankSeries(by).Value(rf)
	}
	return rf.Stats.Psi
}

// Traces reads each member's validation ψ over steps (Trace) of a
// search; nil for a grid. A run that cannot be read ends its member's
// trace there, and a note says so.
func (s *Sweep) Traces() ([]Trace, []string, error) {
	if s.PBT == nil && s.ASHA == nil {
		return nil, nil, nil
	}
	byName, err := s.Runs()
	if err != nil {
		return nil, nil, err
	}
	var notes []string
	load := func(i int, name string) (*runs.Run, *record.History) {
		r, err := pickNamed(i, name, byName)
		if err != nil {
			notes = append(notes, err.Error())
			return nil, nil
		}
		if r == nil {
			return nil, nil
		}
		h, err := record.Load(r)
		if err != nil {
			notes = append(notes, fmt.Sprintf("member %d: run %s: %v", i, name, err))
			return nil, nil
		}
		return r, h
	}
	if s.ASHA != nil {
		sc, err := s.Schedule()
		if err != nil {
			return nil, nil, err
		}
		var out []Trace
		for i := range s.Members {
			t := Trace{Member: i, Describe: s.Describe(i), Ended: sc.Reached(i) == s.ASHA.Top()}
			if r, h := load(i, s.Members[i].Run); h != nil {
				for k := range h.Refreshes {
					rf := &h.Refreshes[k]
					t.Points = append(t.Points, TracePoint{Step: rf.Step, Run: r.Meta.Name, Psi: rankPsi(rf, s.ASHA.Metric), Hyper: rf.Hyper, Copied: -1})
				}
			}
			out = append(out, t)
		}
		return out, notes, nil
	}
	po, err := s.Population()
	if err != nil {
		return nil, nil, err
	}
	last := s.PBT.Gens() - 1
	var out []Trace
	for i := range s.Members {
		t := Trace{Member: i, Describe: s.Describe(i), Ended: po.Reported(i, last) != nil}
		var forks []PBTDecision
		for _, d := range po.Decisions {
			if d.Op == PBTExploit && d.Member == i {
				forks = append(forks, d)
			}
		}
		for k, name := range po.Lineage(i) {
			r, h := load(i, name)
			if h == nil {
				break
			}
			from, to := 0, math.MaxInt
			if k < len(forks) {
				to = forks[k].At
			}
			if k > 0 {
				d := forks[k-1]
				from = d.At
				t.Points = append(t.Points, switchPoint(po, d, h, t.Points))
			}
			rs, err := researcherOf(r, h)
			if err != nil {
				notes = append(notes, fmt.Sprintf("member %d: run %s: %v", i, name, err))
			}
			for j := range h.Refreshes {
				if rf := &h.Refreshes[j]; rf.Step >= from && rf.Step < to {
					hy := rf.Hyper
					if rs != nil {
						hy, _ = rs.at(rf.Step) // a control the engine took applies
					}
					t.Points = append(t.Points, TracePoint{Step: rf.Step, Run: r.Meta.Name, Psi: rankPsi(rf, s.PBT.Metric), Hyper: hy, Copied: -1})
				}
			}
		}
		out = append(out, t)
	}
	return out, notes, nil
}

// switchPoint is where a member switched to a copy by exploit d: the
// copied member's ranked refresh (its report in the log), with the
// member's last settings and the exploit's on top.
func switchPoint(po *Population, d PBTDecision, fork *record.History, before []TracePoint) TracePoint {
	p := TracePoint{Step: d.At, Run: po.RunNameAt(d.From, d.Gen), Psi: math.NaN(), Copied: d.From}
	if rep := po.Reported(d.From, d.Gen); rep != nil {
		p.Step, p.Psi = rep.Step, rep.PsiValue()
	}
	p.Hyper = loop.DefaultHyper()
	if n := len(before); n > 0 {
		p.Hyper = before[n-1].Hyper
	}
	for _, kv := range d.Sets {
		if k, v, ok := strings.Cut(strings.TrimPrefix(kv, "finetune."), "="); ok {
			_ = p.Hyper.Set(k, v) // check took only explored keys
		}
	}
	return p
}

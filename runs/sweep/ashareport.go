package sweep

import (
	"fmt"
	"math"
	"strings"

	"selmix/core/search"
)

// MemberBusy reports whether a process holds member i's lock (runs it).
func (s *Sweep) MemberBusy(i int) bool { return s.memberBusy(i) }

// Steps are the fine-tuning steps a sweep's members have taken, against
// what the grid of its members would take (each run to its end).
type Steps struct{ Spent, Grid int }

// Steps sums the steps the members' runs stand at; a member without a run
// has taken none.
func (s *Sweep) Steps() (Steps, error) {
	byName, err := s.Runs()
	if err != nil {
		return Steps{}, err
	}
	var st Steps
	for i := range s.Members {
		c, err := s.steps(i)
		if err != nil {
			return Steps{}, err
		}
		st.Grid += c
		if r, err := s.pick(i, byName); err == nil && r != nil {
			st.Spent += r.Meta.Steps
		}
	}
	return st, nil
}

// steps is member i's finetune.steps: the plan's budget in a
// successive-halving sweep, else its configuration's.
func (s *Sweep) steps(i int) (int, error) {
	if s.ASHA != nil {
		return s.ASHA.Rungs[s.ASHA.Top()], nil
	}
	c, err := s.Config(i)
	return c.Finetune.Steps, err
}

// ScheduleReport is a successive-halving sweep's schedule as its report
// shows it: each member's ψ at each rung it reached, the decisions in
// the order they were taken, and the steps spent.
type ScheduleReport struct {
	ASHA      *search.ASHA
	Columns   []string // short names
	Members   []ScheduleMember
	Decisions []Decision
	Complete  bool
	Steps     Steps
}

// ScheduleMember is one member in a ScheduleReport.
type ScheduleMember struct {
	Index    int
	Values   []string  // display values of the columns
	Describe string    // "policy=selmix seed=2"
	Psi      []float64 // per rung: its ψ there, NaN where it did not report
	At       []int     // per rung: the step of that ψ's refresh
	Promoted []bool    // per rung: sent on to the next
	Sent     int       // the rung it is in flight to, -1 if none
}

// ScheduleReport reads the schedule and the steps of a successive-halving
// sweep (nil, nil for a grid).
func (s *Sweep) ScheduleReport() (*ScheduleReport, error) {
	if s.ASHA == nil {
		return nil, nil
	}
	sc, err := s.Schedule()
	if err != nil {
		return nil, err
	}
	st, err := s.Steps()
	if err != nil {
		return nil, err
	}
	R := len(s.ASHA.Rungs)
	rep := &ScheduleReport{ASHA: s.ASHA, Columns: ShortNames(s.Columns), Decisions: sc.Decisions, Complete: sc.Complete(), Steps: st}
	for i, m := range s.Members {
		sm := ScheduleMember{Index: i, Describe: s.Describe(i), Psi: make([]float64, R), At: make([]int, R), Promoted: make([]bool, R), Sent: sc.Sent(i)}
		for _, v := range m.Vary {
			sm.Values = append(sm.Values, search.Display(v))
		}
		for k := range sm.Psi {
			sm.Psi[k] = math.NaN()
		}
		rep.Members = append(rep.Members, sm)
	}
	for _, d := range sc.Decisions {
		m := &rep.Members[d.Member]
		switch d.Op {
		case OpReport:
			m.Psi[d.Rung], m.At[d.Rung] = d.PsiValue(), d.Step
		case OpSend:
			if d.Rung > 0 {
				m.Promoted[d.Rung-1] = true
			}
		}
	}
	return rep, nil
}

// rungName heads rung k: "rung 0 (50 steps)", "end (300 steps)".
func (r *ScheduleReport) rungName(k int) string {
	if k == r.ASHA.Top() {
		return fmt.Sprintf("end (%d steps)", r.ASHA.Rungs[k])
	}
	return fmt.Sprintf("rung %d (%d steps)", k, r.ASHA.Rungs[k])
}

// Markdown is the schedule as a report section: the plan, each member's
// ψ per rung (↑ where it was promoted), the decisions in order, and the
// steps spent against the grid's.
func (r *ScheduleReport) Markdown() string {
	var b strings.Builder
	pf := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	a := r.ASHA
	rungs := make([]string, len(a.Rungs))
	for k, x := range a.Rungs {
		rungs[k] = fmt.Sprint(x)
	}
	pf("## Successive halving (ASHA)\n\n")
	pf("Rungs at %s steps (min_steps %d, eta %d). A member stops at each rung's refresh (the rung rounded up to %s) and is ranked by validation ψ of %s there; the top 1/%d of those that reached a rung go on to the next as they report.", strings.Join(rungs, ", "), a.MinSteps, a.Eta, a.AlignText(), a.MetricName(), a.Eta)
	if r.Complete {
		pf(" The schedule is complete.")
	} else {
		pf(" The schedule is not complete (`selmix sweep resume` continues it).")
	}
	pf("\n\nCompute: %d steps, %s of the grid's %d (%d members × %d steps, each run to its end).\n\n", r.Steps.Spent, percent(r.Steps.Spent, r.Steps.Grid), r.Steps.Grid, len(r.Members), a.Rungs[a.Top()])
	head := append([]string{"#"}, r.Columns...)
	for k := range a.Rungs {
		head = append(head, "ψ "+r.rungName(k))
	}
	pf("| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
	for _, m := range r.Members {
		row := append([]string{fmt.Sprint(m.Index)}, m.Values...)
		for k := range a.Rungs {
			cell := ""
			switch {
			case !math.IsNaN(m.Psi[k]):
				cell = fmt.Sprintf("%.4f", m.Psi[k])
				if m.Promoted[k] {
					cell += " ↑"
				}
			case m.Sent == k:
				cell = "…"
			}
			row = append(row, cell)
		}
		for k := range row {
			row[k] = strings.ReplaceAll(row[k], "|", `\|`)
		}
		pf("| %s |\n", strings.Join(row, " | "))
	}
	pf("\n↑ promoted to the next rung; … on its way to this rung.\n\n### Decisions, in the order taken\n\n")
	for n, d := range r.Decisions {
		m := r.Members[d.Member]
		who := fmt.Sprintf("member %d (%s)", d.Member, m.Describe)
		switch {
		case d.Op == OpReport:
			pf("%d. %s reached %s: ψ %.4f at step %d\n", n+1, who, r.rungName(d.Rung), d.PsiValue(), d.Step)
		case d.Rung == 0:
			pf("%d. %s started\n", n+1, who)
		default:
			pf("%d. %s promoted to %s: rank %d of %d at rung %d\n", n+1, who, r.rungName(d.Rung), d.Rank, d.Of, d.Rung-1)
		}
	}
	return b.String()
}

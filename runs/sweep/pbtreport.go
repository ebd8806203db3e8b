package sweep

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"selmix/core/search"
	"selmix/internal/jsonfloat"
)

// PopulationReport is a population-based sweep as its report shows it:
// each member's ψ at the end of each generation and whom it copied
// there, the exploits in order, and each member's lineage of runs.
type PopulationReport struct {
	PBT      *search.PBT
	Columns  []string // short names
	Members  []PopulationMember
	Exploits []PBTDecision
	Complete bool
	Steps    PopulationSteps
}

// PopulationMember is one member in a PopulationReport.
type PopulationMember struct {
	Index    int
	Values   []string  // display values of the columns
	Describe string    // "s=0.5 lr=0.01"
	Psi      []float64 // per generation: its ψ at the end, NaN where it did not report
	Copied   []int     // per generation: the member it copied at its end, -1 if none
	Lineage  []string  // its runs' names, first to last
}

// PopulationReport reads the population of a population-based sweep (nil,
// nil otherwise).
func (s *Sweep) PopulationReport() (*PopulationReport, error) {
	if s.PBT == nil {
		return nil, nil
	}
	po, err := s.Population()
	if err != nil {
		return nil, err
	}
	G := s.PBT.Gens()
	st, err := s.PopulationSteps(po)
	if err != nil {
		return nil, err
	}
	rep := &PopulationReport{PBT: s.PBT, Columns: ShortNames(s.Columns), Complete: po.Complete(), Steps: st}
	for i, m := range s.Members {
		pm := PopulationMember{Index: i, Describe: s.Describe(i), Psi: make([]float64, G), Copied: make([]int, G), Lineage: po.Lineage(i)}
		for _, v := range m.Vary {
			pm.Values = append(pm.Values, search.Display(v))
		}
		for g := range G {
			pm.Psi[g], pm.Copied[g] = math.NaN(), -1
			if d := po.Reported(i, g); d != nil {
				pm.Psi[g] = d.PsiValue()
			}
		}
		rep.Members = append(rep.Members, pm)
	}
	for _, d := range po.Decisions {
		if d.Op == PBTExploit {
			rep.Members[d.Member].Copied[d.Gen] = d.From
			rep.Exploits = append(rep.Exploits, d)
		}
	}
	return rep, nil
}

// Markdown is the population as a report section: the plan, the steps
// spent against the grids (ComputeLine), each member's ψ per generation
// (←j where it then copied member j), the exploits in order, and the
// lineages.
func (r *PopulationReport) Markdown() string {
	var b strings.Builder
	pf := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p := r.PBT
	pf("## Population-based training (PBT)\n\n")
	pf("%d generations of %d steps. At each generation's end the members are ranked by validation ψ of %s; the worst %.0f%% continue from the best %.0f%%'s checkpoints (a fork) and %s.",
		p.Gens(), p.Interval, p.MetricName(), 100*p.Quantile, 100*p.Quantile, p.ExploreText())
	if r.Complete {
		pf(" The population is complete.")
	} else {
		pf(" The population is not complete (`selmix sweep resume` continues it).")
	}
	pf("\n\n%s", r.ComputeLine())
	head := append([]string{"#"}, r.Columns...)
	for g := range p.Gens() {
		head = append(head, fmt.Sprintf("ψ step %d", p.End(g)))
	}
	pf("\n| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
	for _, m := range r.Members {
		row := append([]string{fmt.Sprint(m.Index)}, m.Values...)
		for g := range p.Gens() {
			cell := ""
			if !math.IsNaN(m.Psi[g]) {
				cell = fmt.Sprintf("%.4f", m.Psi[g])
			}
			if m.Copied[g] >= 0 {
				cell += fmt.Sprintf(" ←%d", m.Copied[g])
			}
			row = append(row, cell)
		}
		for k := range row {
			row[k] = strings.ReplaceAll(row[k], "|", `\|`)
		}
		pf("| %s |\n", strings.Join(row, " | "))
	}
	pf("\n←j: the member then continued from member j's checkpoint. The settings a column names are the first population's.\n\n### Exploits, in the order taken\n\n")
	if len(r.Exploits) == 0 {
		pf("None.\n")
	}
	for n, d := range r.Exploits {
		pf("%d. after generation %d: member %d copied member %d (run %s at step %d) as run %s, with %s%s\n", n+1, d.Gen, d.Member, d.From, d.Parent, d.At, d.Run, strings.Join(d.Sets, " "), forecastNote(d))
	}
	pf("\n### Lineages\n\n")
	for _, m := range r.Members {
		pf("- member %d (%s): %s\n", m.Index, m.Describe, strings.Join(m.Lineage, " → "))
	}
	return b.String()
}

// ComputeLine is the steps the population spent against the grid that
// runs each setting it tried to its end and against the spec's grid.
func (r *PopulationReport) ComputeLine() string {
	st := r.Steps
	return fmt.Sprintf("Compute: %d steps, %s of the grid's %d that runs each of the %d distinct settings of %s tried to its end (%d × %d steps), and %s of the spec's grid's %d (%d members × %d steps).\n",
		st.Spent, percent(st.Spent, st.Tried()), st.Tried(), st.Settings, strings.Join(r.PBT.Keys, ", "), st.Settings, st.Steps,
		percent(st.Spent, st.Grid()), st.Grid(), st.Members, st.Steps)
}

// percent is part of whole as a report writes it: "40%".
func percent(part, whole int) string {
	return fmt.Sprintf("%.0f%%", 100*float64(part)/float64(max(1, whole)))
}

// forecastNote says, for an exploit of explore = forecast, what it chose
// from: " (forecast Δψ +0.0123, the best of 8; perturb's own +0.0040)".
func forecastNote(d PBTDecision) string {
	if len(d.Ranked) == 0 {
		return ""
	}
	f := func(x jsonfloat.Float) string {
		if math.IsNaN(float64(x)) {
			return "none"
		}
		return fmt.Sprintf("%+.4f", float64(x))
	}
	for _, c := range d.Ranked {
		if slices.Equal(c.Sets, d.Sets) {
			return fmt.Sprintf(" (forecast Δψ %s, the best of %d; perturb's own %s)", f(c.Forecast), len(d.Ranked), f(d.Ranked[0].Forecast))
		}
	}
	return fmt.Sprintf(" (the best of %d forecasts)", len(d.Ranked))
}

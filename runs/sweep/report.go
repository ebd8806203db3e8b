package sweep

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat"

	"selmix/core/metric"
	"selmix/core/train"
	"selmix/runs/record"
	"selmix/viz"
)

// SeedKey is the axis a report averages over.
const SeedKey = "seed"

// reportColumn is one test metric of a member's final summary.
type reportColumn struct {
	name string
	get  func(s *train.Summary) float64
}

var reportColumns = []reportColumn{
	{"ψ (optimized)", func(s *train.Summary) float64 {
		i := slices.Index(metric.Objectives(), s.Objective)
		if i < 0 || i >= len(s.TestObjAfter) {
			return math.NaN()
		}
		return s.TestObjAfter[i]
	}},
	{"mean recall", func(s *train.Summary) float64 { return s.TestAfter.MeanRecall }},
	{"min recall", func(s *train.Summary) float64 { return s.TestAfter.MinRecall }},
	{"H-mean", func(s *train.Summary) float64 { return s.TestAfter.HMean }},
	{"G-mean", func(s *train.Summary) float64 { return s.TestAfter.GMean }},
	{"min coverage", func(s *train.Summary) float64 { return s.TestAfter.MinCoverage }},
}

// group is the members that differ only by seed.
type group struct {
	key     []string // display values of the grouping columns
	members []int
	sums    []*train.Summary // of its finished members
	first   *viz.Run         // its first finished member, for the figures
	runs    []*viz.Run       // every finished member, for the spread over seeds
}

// ReportOptions says where the report's figures go.
type ReportOptions struct {
	FigDir string // folder for the comparison figures ("" for none)
	FigRel string // FigDir as the Markdown links it (relative to the report)
	Format string // png, svg, pdf or tex; "" = png
}

// Report is the sweep as a Markdown table: members grouped by every
// column but seed, the mean ± sample standard deviation over a group's
// finished members of the test metrics of their final summaries, and the
// comparison figures `selmix export --compare` draws (one run per group:
// its first finished member). Notes say what was left out.
func (s *Sweep) Report(o ReportOptions) (md string, notes []string, err error) {
	byName, err := s.Runs()
	if err != nil {
		return "", nil, err
	}
	var keyCols []int
	for c, k := range s.Columns {
		if k != SeedKey {
			keyCols = append(keyCols, c)
		}
	}
	var groups []*group
	find := func(key []string) *group {
		for _, g := range groups {
			if slices.Equal(g.key, key) {
				return g
			}
		}
		g := &group{key: key}
		groups = append(groups, g)
		return g
	}
	for i, m := range s.Members {
		key := make([]string, len(keyCols))
		for j, c := range keyCols {
			key[j] = Display(m.Vary[c])
		}
		g := find(key)
		g.members = append(g.members, i)
		run, err := s.pick(i, byName)
		if err != nil {
			notes = append(notes, err.Error())
			continue
		}
		if run == nil {
			continue
		}
		h, err := record.Load(run)
		if err != nil {
			notes = append(notes, fmt.Sprintf("member %d: %v", i, err))
			continue
		}
		if h.Final == nil {
			continue
		}
		g.sums = append(g.sums, h.Final)
		if vr, err := viz.FromHistory(run.Dir, run.Meta, h); err == nil {
			g.runs = append(g.runs, vr)
			if g.first == nil {
				g.first = vr
			}
		}
	}
	var b strings.Builder
	pf := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	pf("# Sweep %s\n\n", s.ID)
	finished := 0
	for _, g := range groups {
		finished += len(g.sums)
	}
	pf("%d members, %d finished. Test set after fine-tuning, mean ± sample standard deviation over seeds (finished members only). `selmix sweep status %s` lists the members.\n\n", len(s.Members), finished, s.ID)
	head := []string{}
	names := ShortNames(s.Columns)
	for _, c := range keyCols {
		head = append(head, names[c])
	}
	head = append(head, "n")
	for _, c := range reportColumns {
		head = append(head, c.name)
	}
	pf("| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
	for _, g := range groups {
		row := slices.Clone(g.key)
		row = append(row, fmt.Sprintf("%d/%d", len(g.sums), len(g.members)))
		for _, c := range reportColumns {
			xs := make([]float64, len(g.sums))
			for k, sum := range g.sums {
				xs[k] = c.get(sum)
			}
			row = append(row, MeanStd(xs))
		}
		for k := range row {
			row[k] = strings.ReplaceAll(row[k], "|", `\|`)
		}
		pf("| %s |\n", strings.Join(row, " | "))
	}
	if o.FigDir == "" {
		return b.String(), notes, nil
	}
	var rs []*viz.Run
	for _, g := range groups {
		if g.first == nil {
			continue
		}
		if len(g.key) > 0 {
			g.first.Name = label(s, keyCols, g.key)
		}
		rs = append(rs, g.first)
	}
	if len(rs) == 0 {
		notes = append(notes, "no finished member: no figures")
		return b.String(), notes, nil
	}
	var sg []viz.SeedGroup
	for _, g := range groups {
		if len(g.runs) > 0 {
			sg = append(sg, viz.SeedGroup{Label: g.runs[0].Name, Runs: g.runs})
		}
	}
	sres, serr := viz.SweepCurves(sg, viz.DefaultCompareMetric(rs), o.FigDir, viz.Options{Format: o.Format})
	if sres != nil && len(sres.Files) > 0 {
		pf("\n## Spread over seeds (validation: mean line, ± one std band, pre-trained dashed)\n\n")
		for _, f := range sres.Files {
			pf("![%s](%s)\n", f.Name, filepath.ToSlash(filepath.Join(o.FigRel, f.Name)))
		}
		notes = append(notes, sres.Notes...)
	}
	if serr != nil {
		notes = append(notes, "figures: "+serr.Error())
	}
	res, err := viz.Compare(rs, viz.DefaultCompareMetric(rs), o.FigDir, viz.Options{Format: o.Format})
	if res != nil {
		pf("\n## Figures (`selmix export --compare`, one run per row: its first finished seed)\n\n")
		for _, f := range res.Files {
			pf("![%s](%s)\n", f.Name, filepath.ToSlash(filepath.Join(o.FigRel, f.Name)))
		}
		notes = append(notes, res.Notes...)
	}
	if err != nil {
		notes = append(notes, "figures: "+err.Error())
	}
	return b.String(), notes, nil
}

// label names a group in figure legends: "objective=min-recall policy=greedy".
func label(s *Sweep, keyCols []int, key []string) string {
	var parts []string
	names := ShortNames(s.Columns)
	for j, c := range keyCols {
		if key[j] != "" {
			parts = append(parts, names[c]+"="+key[j])
		}
	}
	return strings.Join(parts, " ")
}

// MeanStd formats xs as "mean ± sample std", the mean alone for one
// value, and "–" for none.
func MeanStd(xs []float64) string {
	switch len(xs) {
	case 0:
		return "–"
	case 1:
		return fmt.Sprintf("%.4f", xs[0])
	}
	m, sd := stat.MeanStdDev(xs, nil) // sample (n−1) standard deviation
	return fmt.Sprintf("%.4f ± %.4f", m, sd)
}

package viz

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"selmix/core/train"
	"selmix/runs/sweep"
)

// SweepOptions says where a sweep report's figures go.
type SweepOptions struct {
	FigDir string // folder for the comparison figures ("" for none)
	FigRel string // FigDir as the Markdown links it (relative to the report)
	Format string // png, svg, pdf or tex; "" = png
}

// SweepReport is a sweep's results as Markdown: members grouped by every
// column but seed, two tables of the mean ± sample standard deviation over
// a group's finished members of the test metrics of their final summaries
// (sweep.ReportColumns) — at the best step (the model each run keeps) and
// at the last step — both ranked by the optimized ψ on test at the best
// step, which the report says; the spread of each group's validation curve
// over its seeds (SweepCurves), and the comparison figures `selmix export
// --compare` draws (one run per group: its first finished member). Notes
// say what was left out.
func SweepReport(r *sweep.Results, o SweepOptions) (md string, notes []string) {
	notes = slices.Clone(r.Notes)
	var b strings.Builder
	pf := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	pf("# Sweep %s\n\n", r.ID)
	pf("%d members, %d finished. Test set, mean ± sample standard deviation over seeds (finished members only). `selmix sweep status %s` lists the members.\n\n", r.Members, r.Finished(), r.ID)
	groups := r.Ranked()
	pf("Ranked by %s, best first.\n", sweep.RankedBy)
	table := func(title string, value func(c sweep.ResultColumn) func(*train.Summary) float64) {
		pf("\n### %s\n\n", title)
		head := slices.Clone(r.Keys)
		head = append(head, "n")
		for _, c := range sweep.ReportColumns {
			head = append(head, c.Name)
		}
		pf("| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
		for _, g := range groups {
			row := slices.Clone(g.Key)
			row = append(row, fmt.Sprintf("%d/%d", len(g.Summaries), g.Members))
			for _, c := range sweep.ReportColumns {
				xs := make([]float64, len(g.Summaries))
				for k, sum := range g.Summaries {
					xs[k] = value(c)(sum)
				}
				row = append(row, sweep.MeanStd(sweep.Known(xs)))
			}
			for k := range row {
				row[k] = strings.ReplaceAll(row[k], "|", `\|`)
			}
			pf("| %s |\n", strings.Join(row, " | "))
		}
	}
	table("Test at the best step (the model each run keeps)", func(c sweep.ResultColumn) func(*train.Summary) float64 { return c.Best })
	table("Test at the last step", func(c sweep.ResultColumn) func(*train.Summary) float64 { return c.After })
	if o.FigDir == "" {
		return b.String(), notes
	}
	var rs []*RunData
	for _, g := range r.Groups {
		if g.First == nil {
			continue
		}
		vr, err := FromHistory(g.First.Dir, g.First.Meta, g.History)
		if err != nil {
			continue
		}
		if len(g.Key) > 0 {
			vr.Meta.Name = g.Label
		}
		rs = append(rs, vr)
	}
	if len(rs) == 0 {
		notes = append(notes, "no finished member: no figures")
		return b.String(), notes
	}
	var sg []SeedGroup
	for _, g := range r.Groups {
		var seeds []*RunData
		for k, run := range g.Runs {
			if vr, err := FromHistory(run.Dir, run.Meta, g.Histories[k]); err == nil {
				seeds = append(seeds, vr)
			}
		}
		if len(seeds) == 0 {
			continue
		}
		label := seeds[0].Meta.Name
		if len(g.Key) > 0 {
			label = g.Label
		}
		sg = append(sg, SeedGroup{Label: label, Runs: seeds})
	}
	if len(sg) > 0 {
		sres, serr := SweepCurves(sg, DefaultCompareMetric(rs), o.FigDir, Options{Format: o.Format})
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
	}
	res, err := Compare(rs, DefaultCompareMetric(rs), o.FigDir, Options{Format: o.Format})
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
	return b.String(), notes
}

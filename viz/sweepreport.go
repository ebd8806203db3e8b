package viz

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"selmix/core/loop"
	"selmix/runs/sweep"
)

// SweepOptions says where a sweep report's figures go.
type SweepOptions struct {
	FigDir string // folder for the comparison figures ("" for none)
	FigRel string // FigDir as the Markdown links it (relative to the report)
	Format string // png, svg, pdf or tex; "" = png
	// Vs, when set, adds to each table the seed-paired difference of
	// every group against its reference group (sweep report --vs).
	Vs *sweep.Reference
}

// SweepReport is a sweep's results as Markdown: members grouped by every
// column but seed, two tables of the mean ± sample standard deviation over
// a group's finished members of the test metrics of their final summaries
// (sweep.ReportColumns) — at the best step (the model each run keeps) and
// at the last step — both ranked by the optimized ψ on test at the best
// step, which the report says; the spread of each group's validation curve
// over its seeds (SweepCurves), and the comparison figures `selmix export
// --compare` draws (one run per group: its first finished member). Notes
// say what was left out. With o.Vs, each table is followed by the
// seed-paired differences against the reference (PairedTable). A search
// (successive halving, a population) begins with its section and, with a
// figure folder, its figures (SweepSearch) linked below it.
func SweepReport(r *sweep.Results, o SweepOptions) (md string, notes []string) {
	notes = slices.Clone(r.Notes)
	var b strings.Builder
	pf := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	pf("# Sweep %s\n\n", r.ID)
	pf("%d members, %d finished. Test set, mean ± sample standard deviation over seeds (finished members only). `selmix sweep status %s` lists the members.\n\n", r.Members, r.Finished(), r.ID)
	if r.Schedule != nil || r.Population != nil {
		if r.Schedule != nil {
			pf("%s\n", r.Schedule.Markdown())
		}
		if r.Population != nil {
			pf("%s\n", r.Population.Markdown())
		}
		if o.FigDir != "" {
			notes = append(notes, searchFigures(&b, r, o)...)
		}
		pf("## Results\n\n")
	}
	groups := r.Ranked()
	pf("Ranked by %s, best first.\n", sweep.RankedBy)
	table := func(title string, value func(c sweep.ResultColumn) func(*loop.Summary) float64) {
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
		if o.Vs != nil {
			pf("\n%s", PairedTable(r, groups, *o.Vs, value))
		}
	}
	table("Test at the best step (the model each run keeps)", func(c sweep.ResultColumn) func(*loop.Summary) float64 { return c.Best })
	table("Test at the last step", func(c sweep.ResultColumn) func(*loop.Summary) float64 { return c.After })
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
		vr.Meta.Name = firstLabel(g, vr.Meta.Name)
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
		sg = append(sg, SeedGroup{Label: seedsLabel(g, seeds[0].Meta.Name), Runs: seeds})
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

// searchFigures writes a search's figures (SweepSearch) into o.FigDir
// and their links to b, under the search's section; it returns the notes.
func searchFigures(b *strings.Builder, r *sweep.Results, o SweepOptions) []string {
	res, err := SweepSearch(r, o.FigDir, Options{Format: o.Format})
	var notes []string
	if res != nil {
		if len(res.Files) > 0 {
			b.WriteString("### Figures (validation ψ of each member over steps")
			if r.Population != nil {
				b.WriteString("; the winner's settings")
			}
			b.WriteString(")\n\n")
			for _, f := range res.Files {
				fmt.Fprintf(b, "![%s](%s)\n", f.Name, filepath.ToSlash(filepath.Join(o.FigRel, f.Name)))
			}
			b.WriteString("\n")
		}
		notes = append(notes, res.Notes...)
	}
	if err != nil {
		notes = append(notes, "search figures: "+err.Error())
	}
	return notes
}

// firstLabel names a group's first finished member in the comparison
// figures: by the group's values (policy=selmix), or where seed is all
// that varies by its seed (seed=1); name where neither says anything.
func firstLabel(g *sweep.Group, name string) string {
	if g.Label != "" {
		return g.Label
	}
	if k := slices.Index(g.Runs, g.First); k >= 0 && k < len(g.Seeds) && g.Seeds[k] != "" {
		return sweep.SeedKey + "=" + g.Seeds[k]
	}
	return name
}

// seedsLabel names a group's spread over its seeds: by the group's
// values, or where seed is all that varies by its seeds (seed=1,2,3);
// name where neither says anything.
func seedsLabel(g *sweep.Group, name string) string {
	if g.Label != "" {
		return g.Label
	}
	if seeds := slices.DeleteFunc(slices.Clone(g.Seeds), func(s string) bool { return s == "" }); len(seeds) > 0 {
		return sweep.SeedKey + "=" + strings.Join(seeds, ",")
	}
	return name
}

// PairedTable is the Markdown table of the seed-paired differences of
// groups against ref (in the order given): for each group and each
// column of sweep.ReportColumns (read by value), the mean ± sample std
// over the seeds that it and its reference group both finished of its
// member's value minus the reference's member's of the same seed
// (sweep.Paired). The reference group's own row says so; a group without
// one, or without a common seed, has none.
func PairedTable(r *sweep.Results, groups []*sweep.Group, ref sweep.Reference, value func(c sweep.ResultColumn) func(*loop.Summary) float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Paired by seed against %s: each member's value minus that of the member of %s with the same seed and the same other values, mean ± sample std over the seeds both finished (pairs: how many).\n\n", ref, ref)
	head := slices.Clone(r.Keys)
	head = append(head, "pairs")
	for _, c := range sweep.ReportColumns {
		head = append(head, "Δ "+c.Name)
	}
	fmt.Fprintf(&b, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
	count := func(*loop.Summary) float64 { return 0 }
	for _, g := range groups {
		row := slices.Clone(g.Key)
		rg := r.RefGroup(g, ref)
		switch {
		case rg == g:
			row = append(row, "reference")
			for range sweep.ReportColumns {
				row = append(row, "–")
			}
		case rg == nil:
			row = append(row, "0")
			for range sweep.ReportColumns {
				row = append(row, "–")
			}
		default:
			row = append(row, fmt.Sprint(len(sweep.Paired(g, rg, count))))
			for _, c := range sweep.ReportColumns {
				row = append(row, sweep.MeanStdSigned(sweep.Paired(g, rg, value(c))))
			}
		}
		for k := range row {
			row[k] = strings.ReplaceAll(row[k], "|", `\|`)
		}
		fmt.Fprintf(&b, "| %s |\n", strings.Join(row, " | "))
	}
	return b.String()
}

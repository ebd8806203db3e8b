package viz

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/runs"
	"selmix/runs/record"
	"selmix/runs/sweep"
)

// sweepSummary is a finished member's summary whose every metric is x and
// whose optimized objective (min recall) is 2x at the last step; the model
// it keeps has every metric 1 − x and ψ 2(1 − x).
func sweepSummary(x float64) *loop.Summary {
	objs := make([]float64, len(metric.Objectives()))
	objs[metric.MinRecall.Index()] = 2 * x
	r := metric.Report{MeanRecall: x, MinRecall: x, HMean: x, GMean: x, MinCoverage: x}
	bo := make([]float64, len(objs))
	bo[metric.MinRecall.Index()] = 2 * (1 - x)
	br := metric.Report{MeanRecall: 1 - x, MinRecall: 1 - x, HMean: 1 - x, GMean: 1 - x, MinCoverage: 1 - x}
	return &loop.Summary{Steps: 100, Objective: metric.MinRecall, TestAfter: r, TestObjAfter: objs,
		Best: &loop.Best{Step: 50, Objective: metric.MinRecall, Test: br, TestObj: bo}}
}

// A sweep report is a table of the groups' mean ± sample std over seeds
// and, with a figure folder, the spread of each group over its seeds and
// the comparison figures of each group's first finished member, linked
// from the Markdown.
func TestSweepReport(t *testing.T) {
	first := func(name string) (*runs.Run, *record.History) {
		t.Helper()
		run, err := runs.Open(filepath.Join("testdata", "run"), name)
		if err != nil {
			t.Fatal(err)
		}
		h, err := record.Load(run)
		if err != nil {
			t.Fatal(err)
		}
		return run, h
	}
	sel, selH := first("viz-selmix")
	uni, uniH := first("viz-uniform")
	res := &sweep.Results{ID: "sw1", Members: 7, Keys: []string{"policy"}, Notes: []string{"member 6: unreadable"}, Groups: []*sweep.Group{
		{Key: []string{"selmix"}, Label: "policy=selmix", Members: 3, Summaries: []*loop.Summary{sweepSummary(0.2), sweepSummary(0.4), sweepSummary(0.6)}, First: sel, History: selH,
			Runs: []*runs.Run{sel, sel, sel}, Histories: []*record.History{selH, selH, selH}},
		{Key: []string{"uniform"}, Label: "policy=uniform", Members: 3, Summaries: []*loop.Summary{sweepSummary(0.5)}, First: uni, History: uniH,
			Runs: []*runs.Run{uni}, Histories: []*record.History{uniH}},
		{Key: []string{"a|b"}, Label: "policy=a|b", Members: 1},
	}}
	md, notes := SweepReport(res, SweepOptions{})
	// selmix: values 0.2, 0.4, 0.6 → mean 0.4, sample std 0.2; ψ is 2x;
	// at best 1 − x: 0.6 ± 0.2, ψ 1.2 ± 0.4. uniform: 0.5 either way.
	// Ranked by ψ at best: selmix (1.2) above uniform (1.0), though at
	// the last step uniform's 1.0 is above selmix's 0.8.
	head := "| policy | n | ψ (optimized) | mean recall | min recall | H-mean | G-mean | min coverage |\n|---|---|---|---|---|---|---|---|\n"
	for _, r := range []string{
		"# Sweep sw1\n",
		"7 members, 4 finished.",
		"Ranked by ψ (optimized) on test at the best step (the model each run keeps), best first.\n",
		"### Test at the best step (the model each run keeps)\n\n" + head +
			"| selmix | 3/3 | 1.2000 ± 0.4000 | 0.6000 ± 0.2000 | 0.6000 ± 0.2000 | 0.6000 ± 0.2000 | 0.6000 ± 0.2000 | 0.6000 ± 0.2000 |\n" +
			"| uniform | 1/3 | 1.0000 | 0.5000 | 0.5000 | 0.5000 | 0.5000 | 0.5000 |\n" +
			`| a\|b | 0/1 | – | – | – | – | – | – |`,
		"### Test at the last step\n\n" + head +
			"| selmix | 3/3 | 0.8000 ± 0.4000 | 0.4000 ± 0.2000 | 0.4000 ± 0.2000 | 0.4000 ± 0.2000 | 0.4000 ± 0.2000 | 0.4000 ± 0.2000 |\n" +
			"| uniform | 1/3 | 1.0000 | 0.5000 | 0.5000 | 0.5000 | 0.5000 | 0.5000 |\n",
	} {
		if !strings.Contains(md, r) {
			t.Errorf("report lacks %q:\n%s", r, md)
		}
	}
	if strings.Contains(md, "## Figures") || strings.Contains(md, "## Spread over seeds") {
		t.Errorf("figures without a figure folder:\n%s", md)
	}
	if !reflect.DeepEqual(notes, []string{"member 6: unreadable"}) {
		t.Errorf("notes %v, want the results' own", notes)
	}

	dir := filepath.Join(t.TempDir(), "report-figures")
	md, _ = SweepReport(res, SweepOptions{FigDir: dir, FigRel: "report-figures", Format: "png"})
	for _, name := range []string{"compare-psi_min-recall.png", "compare-final.png"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("figure %s: %v", name, err)
		}
		if link := "](report-figures/" + name + ")"; !strings.Contains(md, link) {
			t.Errorf("report does not link %s:\n%s", name, md)
		}
	}
	// The spread over seeds, with the pre-trained model.
	if !strings.Contains(md, "## Spread over seeds") || !strings.Contains(md, "(report-figures/sweep-") {
		t.Errorf("report has no spread figure:\n%s", md)
	}
	spread, _ := filepath.Glob(filepath.Join(dir, "sweep-*.csv"))
	if len(spread) != 1 {
		t.Fatalf("spread CSVs %v, want one", spread)
	}
	if b, err := os.ReadFile(spread[0]); err != nil || !strings.Contains(string(b), "policy=selmix,pre-trained,,3,") || !strings.Contains(string(b), "policy=uniform,pre-trained,,1,") {
		t.Errorf("spread CSV lacks the pre-trained rows of 3 and 1 seeds (%v):\n%s", err, b)
	}
	csv, err := os.ReadFile(filepath.Join(dir, "compare-final.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(csv), "policy=selmix") || !strings.Contains(string(csv), "policy=uniform") {
		t.Errorf("the figures do not name the runs by their group:\n%s", csv)
	}

	res.Groups = res.Groups[2:]
	if _, notes := SweepReport(res, SweepOptions{FigDir: dir}); !reflect.DeepEqual(notes, []string{"member 6: unreadable", "no finished member: no figures"}) {
		t.Errorf("no finished member: notes %v", notes)
	}
}

// WriteSweepReport writes the report to its file, creating its folder,
// with the figures in the folder named for it, linked relative to it.
func TestWriteSweepReport(t *testing.T) {
	run, err := runs.Open(filepath.Join("testdata", "run"), "viz-selmix")
	if err != nil {
		t.Fatal(err)
	}
	h, err := record.Load(run)
	if err != nil {
		t.Fatal(err)
	}
	res := &sweep.Results{ID: "sw2", Members: 1, Keys: []string{"policy"}, Groups: []*sweep.Group{
		{Key: []string{"selmix"}, Label: "policy=selmix", Members: 1, Summaries: []*loop.Summary{sweepSummary(0.3)}, First: run, History: h,
			Runs: []*runs.Run{run}, Histories: []*record.History{h}},
	}}
	out := filepath.Join(t.TempDir(), "sub", "paper.md")
	md, notes, err := WriteSweepReport(res, out, SweepOptions{Format: "svg"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil || string(b) != md || len(notes) != 0 {
		t.Fatalf("file %q (%v) is not the Markdown returned, or notes %v", b, err, notes)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(out), "paper-figures", "compare-final.svg")); err != nil || !strings.Contains(md, "](paper-figures/compare-final.svg)") {
		t.Errorf("figure compare-final.svg: %v; linked: %v", err, strings.Contains(md, "](paper-figures/compare-final.svg)"))
	}
	if !strings.Contains(md, "| selmix | 1/1 | 0.6000 | 0.3000 |") {
		t.Errorf("report lacks the row of selmix:\n%s", md)
	}
}

// With a reference (--vs), each table is followed by the seed-paired
// differences of every group against it: the reference's own row says
// so, and a group with no finished seed has no difference.
func TestSweepReportVs(t *testing.T) {
	sums := func(xs ...float64) []*loop.Summary {
		var out []*loop.Summary
		for _, x := range xs {
			out = append(out, sweepSummary(x))
		}
		return out
	}
	res := &sweep.Results{ID: "abl", Members: 9, Keys: []string{"policy"}, Columns: []string{"finetune.policy"}, Seeded: true, Groups: []*sweep.Group{
		{Key: []string{"selmix"}, Label: "policy=selmix", Members: 3, Seeds: []string{"2", "1", "3"}, Summaries: sums(0.5, 0.3, 0.6)},
		{Key: []string{"resample"}, Label: "policy=resample", Members: 3, Seeds: []string{"1", "2", "3"}, Summaries: sums(0.2, 0.3, 0.4)},
		{Key: []string{"greedy"}, Label: "policy=greedy", Members: 3},
	}}
	ref, err := res.ParseReference("finetune.policy=resample")
	if err != nil {
		t.Fatal(err)
	}
	md, _ := SweepReport(res, SweepOptions{Vs: &ref})
	// Last step, metrics x: seed 2 0.5 − 0.3, seed 1 0.3 − 0.2, seed 3
	// 0.6 − 0.4 = 0.2, 0.1, 0.2: mean 1/6, sample std √(1/300) = 0.0577;
	// ψ is 2x: twice both. At the best step the metrics are 1 − x: the
	// opposite sign. Rows in the tables' order: resample ranks first.
	head := "| policy | pairs | Δ ψ (optimized) | Δ mean recall | Δ min recall | Δ H-mean | Δ G-mean | Δ min coverage |\n|---|---|---|---|---|---|---|---|\n"
	rest := "| resample | reference | – | – | – | – | – | – |\n"
	for _, want := range []string{
		"### Test at the best step (the model each run keeps)\n\n",
		"Paired by seed against policy=resample: each member's value minus that of the member of policy=resample with the same seed and the same other values, mean ± sample std over the seeds both finished (pairs: how many).\n\n" +
			head + rest +
			"| selmix | 3 | -0.3333 ± 0.1155 | -0.1667 ± 0.0577 | -0.1667 ± 0.0577 | -0.1667 ± 0.0577 | -0.1667 ± 0.0577 | -0.1667 ± 0.0577 |\n" +
			"| greedy | 0 | – | – | – | – | – | – |\n\n### Test at the last step",
		head + rest +
			"| selmix | 3 | +0.3333 ± 0.1155 | +0.1667 ± 0.0577 | +0.1667 ± 0.0577 | +0.1667 ± 0.0577 | +0.1667 ± 0.0577 | +0.1667 ± 0.0577 |\n" +
			"| greedy | 0 | – | – | – | – | – | – |\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	if plain, _ := SweepReport(res, SweepOptions{}); strings.Contains(plain, "Paired by seed") || strings.Contains(plain, "Δ ") {
		t.Errorf("paired differences without --vs:\n%s", plain)
	}
}

// A sweep whose only column is seed names its member in the comparison
// figures by its seed and its spread by its seeds, not by run names.
func TestSweepReportSeedOnly(t *testing.T) {
	run, err := runs.Open(filepath.Join("testdata", "run"), "viz-selmix")
	if err != nil {
		t.Fatal(err)
	}
	h, err := record.Load(run)
	if err != nil {
		t.Fatal(err)
	}
	res := &sweep.Results{ID: "seeds", Members: 2, Seeded: true, Groups: []*sweep.Group{
		{Key: []string{}, Members: 2, Seeds: []string{"1", "2"}, Summaries: []*loop.Summary{sweepSummary(0.3), sweepSummary(0.4)}, First: run, History: h,
			Runs: []*runs.Run{run, run}, Histories: []*record.History{h, h}},
	}}
	dir := t.TempDir()
	SweepReport(res, SweepOptions{FigDir: dir, Format: "svg"})
	for _, c := range []struct{ glob, want string }{
		{"compare-final.csv", "\nseed=1,"},
		{"sweep-*.csv", "\n\"seed=1,2\","},
	} {
		files, _ := filepath.Glob(filepath.Join(dir, c.glob))
		if len(files) != 1 {
			t.Fatalf("%s: %v", c.glob, files)
		}
		b, err := os.ReadFile(files[0])
		if err != nil || !strings.Contains(string(b), c.want) || strings.Contains(string(b), "viz-selmix") {
			t.Errorf("%s names the member by %q? (%v)\n%s", c.glob, c.want, err, b)
		}
	}
}

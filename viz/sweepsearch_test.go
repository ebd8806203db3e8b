package viz

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot"

	"selmix/runs/sweep"
	"selmix/runs/sweep/sweeptest"
)

// csvRows is a figure's CSV in dir without its header, one line a row.
func csvRows(t *testing.T, dir, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	return lines[1:]
}

// A population's report links its ψ figure and its winner's settings
// beside the search's section; each member's line is its lineage
// stitched at the fork step, the copied member's ranked refresh between
// (sweeptest.Population: member 3 copies member 0 after step 100, member
// 2 copies member 3's fork after step 200), every ψ its run's refresh's;
// the winner (member 2) has lr and s of its own run up to step 200, then
// its fork's.
func TestSweepSearchPopulation(t *testing.T) {
	s := sweeptest.Population(t)
	res, err := s.Results()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "report.md")
	if dir := os.Getenv("SELMIX_SWEEP_FIGURES"); dir != "" {
		out = filepath.Join(dir, "report.md") // to look at them
	}
	md, notes, err := WriteSweepReport(res, out, SweepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range notes {
		if strings.Contains(n, "sweep-population") || strings.Contains(n, "winner") || strings.Contains(n, "search") || strings.Contains(n, "ψ over steps") {
			t.Errorf("note %q", n)
		}
	}
	dir := strings.TrimSuffix(out, ".md") + "-figures"
	for _, want := range []string{
		"Compute: 1200 steps, 80% of the grid's 1500",
		"- member 3 (s=4): " + s.Members[3].Run + " → " + s.Members[3].Run + "-g1\n\n### Figures (validation ψ of each member over steps; the winner's settings)\n\n" +
			"![sweep-population.png](report-figures/sweep-population.png)\n![sweep-winner-settings.png](report-figures/sweep-winner-settings.png)\n\n## Results\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	run := func(i int) string { return s.Members[i].Run }
	row := func(step, member int, run string, psi float64, note string) string {
		return strings.Join([]string{itoa(step), itoa(member), run, formatValue(psi), note}, ",")
	}
	own := func(i, k, from, to int, name string) []string {
		var out []string
		for step := from; step <= to; step += 25 {
			out = append(out, row(step, i, name, sweeptest.PopulationPsi(i, k, step), ""))
		}
		return out
	}
	var want []string
	// Members 0, 1 and 3, then the winner drawn last, on top.
	want = append(want, own(0, 0, 0, 300, run(0))...)
	want = append(want, own(1, 0, 0, 300, run(1))...)
	want = append(want, own(3, 0, 0, 100, run(3))...)
	want = append(want, row(100, 3, run(0), 0.6, "switched: continued from member 0's checkpoint after this refresh"))
	want = append(want, own(3, 1, 125, 300, run(3)+"-g1")...)
	want = append(want, own(2, 0, 0, 200, run(2))...)
	want = append(want, row(200, 2, run(3)+"-g1", 0.75, "switched: continued from member 3's checkpoint after this refresh"))
	want = append(want, own(2, 1, 225, 300, run(2)+"-g2")...)
	if got := csvRows(t, dir, "sweep-population.csv"); !slices.Equal(got, want) {
		t.Errorf("sweep-population.csv:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The winner's settings: lr 0.01 and s 2 in its own run to step 200,
	// then its fork's lr 0.012 and s 0.6 from the switch on.
	var set []string
	for _, key := range []string{"lr", "s"} {
		for step := 0; step <= 200; step += 25 {
			v := map[string]string{"lr": "0.01", "s": "2"}[key]
			set = append(set, strings.Join([]string{itoa(step), run(2), key, v, v, ""}, ","))
		}
		v := map[string]string{"lr": "0.012", "s": "0.6"}[key]
		set = append(set, strings.Join([]string{"200", run(3) + "-g1", key, v, v, "switched: continued from member 3's checkpoint with these settings"}, ","))
		for step := 225; step <= 300; step += 25 {
			set = append(set, strings.Join([]string{itoa(step), run(2) + "-g2", key, v, v, ""}, ","))
		}
	}
	if got := csvRows(t, dir, "sweep-winner-settings.csv"); !slices.Equal(got, set) {
		t.Errorf("sweep-winner-settings.csv:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(set, "\n"))
	}
	for _, name := range []string{"sweep-population.png", "sweep-winner-settings.png"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("figure %s: %v", name, err)
		}
	}
}

// Successive halving: each member's ψ up to where it stopped, the one
// that ran to the end named so; no settings figure. A grid's report has
// neither figure.
func TestSweepSearchSchedule(t *testing.T) {
	s := sweeptest.NewASHA(t, "name = \"halving\"\n[base]\n\"finetune.steps\" = 270\n\"finetune.refresh\" = 10\n[axes]\n\"finetune.s\" = [0.5, 1, 2]\n[asha]\nmin_steps = 30\n")
	sc, err := s.Schedule()
	if err != nil {
		t.Fatal(err)
	}
	ends := []int{31, 91, 270}
	for i, end := range ends {
		var rs []sweeptest.Refresh
		for step := 0; step <= min(end, 270); step += 10 {
			rs = append(rs, sweeptest.Refresh{Step: step, Psi: float64(i+1) * float64(step) / 2700})
		}
		sweeptest.Record(t, s, sweeptest.Run{Name: s.Members[i].Run, Refreshes: rs, End: end, Stop: end < 270})
	}
	// The log: member 2 went to the end, member 1 to rung 1, member 0
	// stopped at rung 0.
	for _, d := range []sweep.Decision{{Op: sweep.OpSend, Member: 0, Rung: 0, StopAt: 31}, {Op: sweep.OpSend, Member: 1, Rung: 0, StopAt: 31}, {Op: sweep.OpSend, Member: 2, Rung: 0, StopAt: 31}} {
		if err := sc.Take(d); err != nil {
			t.Fatal(err)
		}
	}
	res, err := s.Results()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "fig")
	if d := os.Getenv("SELMIX_SWEEP_FIGURES"); d != "" {
		dir = filepath.Join(d, "halving-figures") // to look at them
	}
	r, err := SweepSearch(res, dir, Options{})
	if err != nil || len(r.Files) != 1 || r.Files[0].Name != "sweep-population.png" {
		t.Fatalf("files %v: %v", r, err)
	}
	rows := csvRows(t, dir, "sweep-population.csv")
	if want := 4 + 10 + 28; len(rows) != want || rows[0] != "0,0,"+s.Members[0].Run+",0," || rows[len(rows)-1] != "270,2,"+s.Members[2].Run+",0.3," {
		t.Errorf("%d rows, want %d: first %q, last %q", len(rows), want, rows[0], rows[len(rows)-1])
	}
	if _, err := SweepSearch(&sweep.Results{}, dir, Options{}); err == nil {
		t.Error("a grid's search figures: no error")
	}
}

// The settings panels label the values taken where labels cannot
// overlap: the first and the last always, and between them those an
// eighth of the axis apart from both neighbours kept.
func TestSpacedTicks(t *testing.T) {
	lin := plot.Axis{Min: 0, Max: 10, Scale: plot.LinearScale{}}
	for _, c := range []struct {
		vals, want []float64
	}{
		{[]float64{1, 3.66, 6.22, 6.387}, []float64{1, 3.66, 6.387}},
		{[]float64{1, 2, 3, 4, 5}, []float64{1, 3, 5}},
		{[]float64{2}, []float64{2}},
		{[]float64{2, 2.5}, []float64{2}},
		{[]float64{0, 9}, []float64{0, 9}},
	} {
		if got := spaced(lin, c.vals); !slices.Equal(got, c.want) {
			t.Errorf("spaced(%v) = %v, want %v", c.vals, got, c.want)
		}
	}
	// On a log axis the distance is the logarithm's: 0.003 → 0.033 is far,
	// 0.051 → 0.057 is not.
	lg := plot.Axis{Min: 0.0024, Max: 0.071, Scale: plot.LogScale{}}
	if got, want := spaced(lg, []float64{0.003, 0.03305, 0.05088, 0.05676}), []float64{0.003, 0.03305, 0.05676}; !slices.Equal(got, want) {
		t.Errorf("log: %v, want %v", got, want)
	}
}

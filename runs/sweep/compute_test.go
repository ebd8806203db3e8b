package sweep_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"selmix/core/metric"
	"selmix/core/search"
	"selmix/runs/record"
	"selmix/runs/sweep"
	"selmix/runs/sweep/sweeptest"
)

// The steps a population spent, counted by hand (sweeptest.Population):
// members 0 and 1 ran 300 steps in their own runs; member 2 ran 201 in
// its own and 300 − 201 = 99 in its fork; member 3 101 and 199: 1200,
// the spec's grid of 4 × 300. It tried 5 distinct settings of (lr, s):
// (0.01, 0.5), (0.01, 1), (0.01, 2), (0.01, 4) and (0.012, 0.6), which
// the second exploit writes again as 0.0120 and 0.60: a grid of those is
// 5 × 300 = 1500 steps, of which 1200 is 80%.
func TestPopulationSteps(t *testing.T) {
	s := sweeptest.Population(t)
	rep, err := s.PopulationReport()
	if err != nil {
		t.Fatal(err)
	}
	st := rep.Steps
	if st.Spent != 1200 || st.Settings != 5 || st.Tried() != 1500 || st.Grid() != 1200 {
		t.Errorf("spent %d, settings %d, tried %d, grid %d; want 1200, 5, 1500, 1200", st.Spent, st.Settings, st.Tried(), st.Grid())
	}
	want := "Compute: 1200 steps, 80% of the grid's 1500 that runs each of the 5 distinct settings of lr, s tried to its end (5 × 300 steps), and 100% of the spec's grid's 1200 (4 members × 300 steps).\n"
	if got := rep.ComputeLine(); got != want {
		t.Errorf("compute line\n%q\nwant\n%q", got, want)
	}
	if md := rep.Markdown(); !strings.Contains(md, "The population is complete.\n\n"+want+"\n| # | s |") {
		t.Errorf("the section lacks the compute line after the plan:\n%s", md)
	}
}

// Each member's trace follows its lineage: its own run up to the fork
// step, the copied member's ranked refresh where it switched (with the
// fork's settings), then the fork's refreshes; ψ is each run's refresh's.
// The winner is the best at the end.
func TestPopulationTraces(t *testing.T) {
	s := sweeptest.Population(t)
	ts, notes, err := s.Traces()
	if err != nil || len(notes) > 0 {
		t.Fatalf("traces: %v %v", err, notes)
	}
	run := func(i int) string { return s.Members[i].Run }
	type pt struct {
		step   int
		run    string
		psi    float64
		copied int
		s      string
	}
	own := func(i, k, from, to int, name, sv string) []pt {
		var out []pt
		for step := from; step <= to; step += 25 {
			out = append(out, pt{step, name, sweeptest.PopulationPsi(i, k, step), -1, sv})
		}
		return out
	}
	cat := func(parts ...[]pt) []pt {
		var out []pt
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	want := [][]pt{
		own(0, 0, 0, 300, run(0), "0.5"),
		own(1, 0, 0, 300, run(1), "1"),
		cat(own(2, 0, 0, 200, run(2), "2"), []pt{{200, run(3) + "-g1", 0.75, 3, "0.6"}}, own(2, 1, 225, 300, run(2)+"-g2", "0.6")),
		cat(own(3, 0, 0, 100, run(3), "4"), []pt{{100, run(0), 0.6, 0, "0.6"}}, own(3, 1, 125, 300, run(3)+"-g1", "0.6")),
	}
	if len(ts) != len(want) {
		t.Fatalf("%d traces, want %d", len(ts), len(want))
	}
	for i, tr := range ts {
		var got []pt
		for _, p := range tr.Points {
			sv, _ := p.Hyper.Get("s")
			got = append(got, pt{p.Step, p.Run, p.Psi, p.Copied, sv})
		}
		if fmt.Sprint(got) != fmt.Sprint(want[i]) {
			t.Errorf("member %d:\n%v\nwant\n%v", i, got, want[i])
		}
		if !tr.Ended || tr.Member != i {
			t.Errorf("member %d: member %d, ended %v", i, tr.Member, tr.Ended)
		}
	}
	if w := sweep.Winner(ts); w != 2 {
		t.Errorf("winner %d, want 2 (ψ 0.95 at step 300)", w)
	}
	ts[2].Ended = false // a member that has not ended loses to one that has
	if w := sweep.Winner(ts); w != 3 {
		t.Errorf("winner %d with member 2 not ended, want 3", w)
	}
}

// Status of a population: each member's explored settings at its run's
// last refresh (a copy's are its fork's), and the member leading.
func TestPopulationStatusNow(t *testing.T) {
	s := sweeptest.Population(t)
	st, err := sweep.NewReader(s, nil).Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var now []string
	for _, m := range st.Members {
		now = append(now, m.Now)
	}
	want := []string{"lr=0.01 s=0.5", "lr=0.01 s=1", "lr=0.012 s=0.6", "lr=0.012 s=0.6"}
	if strings.Join(now, "|") != strings.Join(want, "|") {
		t.Errorf("now %q, want %q", now, want)
	}
	var b strings.Builder
	if err := st.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "population complete; leading: member 2 (ψ 0.9500, lr=0.012 s=0.6)\n") || !regexp.MustCompile(`GEN +NOW`).MatchString(b.String()) {
		t.Errorf("status:\n%s", b.String())
	}
}

// What a copy takes is the researcher's settings, not the engine's own:
// the fixture's refreshes record an lr a third of the configuration's (as
// finetune.adapt = "lr" does), and a copy of member 3 after generation 1
// takes its fork's lr, 0.012, not 0.004.
func TestPopulationSettingsAreTheResearchers(t *testing.T) {
	s := sweeptest.Population(t)
	po, err := s.Population()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		i, g   int
		lr, sv string
	}{{0, 0, "0.01", "0.5"}, {3, 1, "0.012", "0.6"}, {2, 2, "0.012", "0.6"}} {
		vals, _, err := s.Settings(po, c.i, c.g)
		if err != nil || vals["lr"] != c.lr || vals["s"] != c.sv {
			t.Errorf("member %d at generation %d: %v (%v), want lr=%s s=%s", c.i, c.g, vals, err, c.lr, c.sv)
		}
	}
}

// Every series a search may rank by (search.RankMetric) is the
// catalogue's: an objective's ψ under its name or its key, a reported
// metric under its key, each read from a refresh by the catalogue's own
// series (RankSeries).
func TestRankMetricIsTheCatalogues(t *testing.T) {
	n := 0
	for _, s := range record.AllSeries() {
		if s.Objective == "" && s.Scalar == nil {
			continue
		}
		n++
		got, err := search.RankMetric(s.Key)
		if err != nil {
			t.Errorf("the catalogue's %s: %v", s.Key, err)
			continue
		}
		if k := sweep.RankSeries(got).Key; k != s.Key {
			t.Errorf("RankMetric(%q) = %q, read as the series %q", s.Key, got, k)
		}
		if s.Objective != "" {
			if byName, err := search.RankMetric(string(s.Objective)); err != nil || sweep.RankSeries(byName).Key != s.Key {
				t.Errorf("objective %s: %q (%v)", s.Objective, byName, err)
			}
		}
	}
	if n != len(metric.Objectives())+len(metric.Scalars()) {
		t.Errorf("%d series checked, want every objective and reported metric", n)
	}
}

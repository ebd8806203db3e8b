package sweep_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"selmix/core/search"
	"selmix/runs"
	"selmix/runs/sweep"
	"selmix/runs/sweep/sweeptest"
)

// pbtSweep is a created population-based sweep of four members, three
// generations of 100 steps.
func pbtSweep(t *testing.T) *sweep.Sweep {
	return sweeptest.NewPBT(t, "name = \"pop\"\n[base]\n\"finetune.steps\" = 300\n\"finetune.refresh\" = 25\n[axes]\n\"finetune.s\" = [0.5, 1, 2, 4]\n[pbt]\ninterval = 100\n")
}

// The population's log: reports, then a generation's exploits, then its
// advance, each in turn; the log read again is the same population, a
// torn last line is left out and a damaged one refused; a member runs
// each generation in the run its last earlier exploit made.
func TestPopulationLog(t *testing.T) {
	s := pbtSweep(t)
	po, err := s.Population()
	if err != nil {
		t.Fatal(err)
	}
	e := search.Exploit{Member: 3, From: 0, Sets: []string{"finetune.s=0.6"}}
	if err := po.Exploit(0, e, "p0", 101); err == nil {
		t.Error("an exploit before every member reported was taken")
	}
	for i, psi := range []float64{0.6, 0.5, 0.4, 0.3} {
		if err := po.Report(i, 0, 100, psi); err != nil {
			t.Fatal(err)
		}
	}
	if err := po.Report(1, 0, 100, 0.5); err == nil {
		t.Error("a second report of member 1 was taken")
	}
	if err := po.Report(1, 1, 200, 0.5); err == nil {
		t.Error("a report of the next generation before the advance was taken")
	}
	if err := po.Exploit(0, e, "p0", 101); err != nil {
		t.Fatal(err)
	}
	if err := po.Advance(0); err != nil {
		t.Fatal(err)
	}
	if po.Gen() != 1 || po.Complete() || po.RunNameAt(3, 0) != s.Members[3].Run || po.RunName(3) != s.Members[3].Run+"-g1" || po.RunName(2) != s.Members[2].Run {
		t.Errorf("gen %d, complete %v, runs %q %q %q", po.Gen(), po.Complete(), po.RunNameAt(3, 0), po.RunName(3), po.RunName(2))
	}
	back, err := s.Population()
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Decisions) != 6 || back.Gen() != 1 || back.Exploited(3) == nil || back.Exploited(3).Parent != "p0" || back.Reported(2, 0).PsiValue() != 0.4 {
		t.Errorf("read back: %d decisions, gen %d, exploit %+v", len(back.Decisions), back.Gen(), back.Exploited(3))
	}
	if got := back.Lineage(3); len(got) != 2 || got[1] != s.Members[3].Run+"-g1" {
		t.Errorf("lineage %v", got)
	}
	path := filepath.Join(s.Dir, sweep.PopulationName)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"op":"report","mem`) // a process killed mid-line
	f.Close()
	if torn, err := s.Population(); err != nil || len(torn.Decisions) != 6 {
		t.Errorf("torn last line: %v", err)
	}
	// The next decision cuts the torn line and is read back.
	if err := back.Report(0, 1, 200, 0.7); err != nil {
		t.Fatal(err)
	}
	if again, err := s.Population(); err != nil || len(again.Decisions) != 7 {
		t.Errorf("after the torn line: %v", err)
	}
	b, _ := os.ReadFile(path)
	os.WriteFile(path, []byte(strings.Replace(string(b), `"op":"advance","member":0,"gen":0`, `"op":"advance","member":0,"gen":7`, 1)), 0o644)
	if _, err := s.Population(); !errors.Is(err, runs.ErrDamaged) {
		t.Errorf("a damaged line: %v, want damage", err)
	}
}

// The report's section: each member's ψ per generation with whom it then
// copied, the exploits in order, the lineages.
func TestPopulationReport(t *testing.T) {
	s := pbtSweep(t)
	po, err := s.Population()
	if err != nil {
		t.Fatal(err)
	}
	for i, psi := range []float64{0.6, 0.5, 0.4, 0.3} {
		if err := po.Report(i, 0, 100, psi); err != nil {
			t.Fatal(err)
		}
	}
	if err := po.Exploit(0, search.Exploit{Member: 3, From: 0, Sets: []string{"finetune.s=0.6"}}, "p0", 101); err != nil {
		t.Fatal(err)
	}
	if err := po.Advance(0); err != nil {
		t.Fatal(err)
	}
	rep, err := s.PopulationReport()
	if err != nil {
		t.Fatal(err)
	}
	md := rep.Markdown()
	for _, want := range []string{
		"## Population-based training (PBT)\n\n3 generations of 100 steps.", "The population is not complete",
		"| # | s | ψ step 100 | ψ step 200 | ψ step 300 |", "| 3 | 4 | 0.3000 ←0 |  |  |", "| 0 | 0.5 | 0.6000 |  |  |",
		"1. after generation 0: member 3 copied member 0 (run p0 at step 101) as run " + s.Members[3].Run + "-g1, with finetune.s=0.6\n",
		"- member 3 (s=4): " + s.Members[3].Run + " → " + s.Members[3].Run + "-g1\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

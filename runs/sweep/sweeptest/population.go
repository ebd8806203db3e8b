package sweeptest

import (
	"fmt"
	"testing"

	"selmix/core/search"
	"selmix/runs/sweep"
)

// PopulationSpec is a population of four members (s = 0.5, 1, 2, 4, lr
// 0.01), three generations of 100 steps, refreshing every 25, exploring
// lr and s, ranked by ψ of min recall.
const PopulationSpec = `name = "pop"
[base]
"finetune.steps" = 300
"finetune.refresh" = 25
"finetune.lr" = 0.01
[axes]
"finetune.s" = [0.5, 1, 2, 4]
[pbt]
interval = 100
keys = ["lr", "s"]
metric = "min-recall"
`

// PopulationPsi is the validation ψ at step of run k of member i's
// lineage in Population's sweep (k = 0 its own run, 1 its first fork).
func PopulationPsi(i, k, step int) float64 {
	x := float64(step)
	switch {
	case i == 0:
		return 0.5 + x/1000
	case i == 1:
		return 0.45 + x/2000
	case i == 2 && k == 0:
		return 0.3 + x/1000
	case i == 2:
		return 0.75 + (x-200)/500
	case i == 3 && k == 0:
		return 0.2 + x/1000
	}
	return 0.6 + 1.5*(x-100)/1000
}

// Population is a complete population whose runs and log are on disk,
// ψ as PopulationPsi says:
//
//	generation 0 (step 100): ψ 0.6, 0.5, 0.4, 0.3; member 3 copies
//	member 0 at its checkpoint at step 101 as <run 3>-g1, with lr=0.012
//	s=0.6.
//	generation 1 (step 200): ψ 0.7, 0.55, 0.5, 0.75; member 2 copies
//	member 3 (run <run 3>-g1) at step 201 as <run 2>-g2, with
//	lr=0.0120 s=0.60 (the same settings, written otherwise).
//	generation 2 (step 300): ψ 0.8, 0.6, 0.95, 0.9: member 2 wins.
//
// Members 0 and 1 run in their own runs to step 300; member 3's own run
// stops at 101 and member 2's at 201.
func Population(t testing.TB) *sweep.Sweep {
	t.Helper()
	s := NewPBT(t, PopulationSpec)
	refreshes := func(i, k, from, to int, sets ...string) []Refresh {
		var out []Refresh
		for step := from; step <= to; step += 25 {
			out = append(out, Refresh{Step: step, Psi: PopulationPsi(i, k, step), Sets: sets})
		}
		return out
	}
	own := func(i int) []string { return []string{"lr=0.01", "s=" + []string{"0.5", "1", "2", "4"}[i]} }
	run := func(i int) string { return s.Members[i].Run }
	id0 := Record(t, s, Run{Name: run(0), Refreshes: refreshes(0, 0, 0, 300, own(0)...), End: 300})
	Record(t, s, Run{Name: run(1), Refreshes: refreshes(1, 0, 0, 300, own(1)...), End: 300})
	Record(t, s, Run{Name: run(2), Refreshes: refreshes(2, 0, 0, 200, own(2)...), End: 201, Stop: true})
	Record(t, s, Run{Name: run(3), Refreshes: refreshes(3, 0, 0, 100, own(3)...), End: 101, Stop: true})
	id3 := Record(t, s, Run{Name: run(3) + "-g1", Parent: id0, Start: 101, Refreshes: refreshes(3, 1, 125, 300, "lr=0.012", "s=0.6"), End: 300})
	Record(t, s, Run{Name: run(2) + "-g2", Parent: id3, Start: 201, Refreshes: refreshes(2, 1, 225, 300, "lr=0.012", "s=0.6"), End: 300})

	po, err := s.Population()
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	report := func(g int, ks ...int) {
		t.Helper()
		for i, k := range ks {
			must(po.Report(i, g, 100*(g+1), PopulationPsi(i, k, 100*(g+1))))
		}
	}
	report(0, 0, 0, 0, 0)
	must(po.Exploit(0, search.Exploit{Member: 3, From: 0, Sets: []string{"finetune.lr=0.012", "finetune.s=0.6"}}, id0, 101))
	must(po.Advance(0))
	report(1, 0, 0, 0, 1)
	must(po.Exploit(1, search.Exploit{Member: 2, From: 3, Sets: []string{"finetune.lr=0.0120", "finetune.s=0.60"}}, id3, 201))
	must(po.Advance(1))
	report(2, 0, 0, 1, 1)
	if !po.Complete() {
		t.Fatal(fmt.Errorf("the population is not complete"))
	}
	return s
}

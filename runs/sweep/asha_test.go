package sweep_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/core/search"
	"selmix/runs"
	"selmix/runs/record"
	"selmix/runs/sweep"
	"selmix/runs/sweep/sweeptest"
)

// ashaSpec has nine members (three policies by three seeds) of 270 steps
// refreshing every 10: rungs at 10, 30, 90 and 270.
const ashaSpec = `
name = "halving"
[base]
"finetune.steps" = 270
"finetune.refresh" = 10
[axes]
"finetune.policy" = ["selmix", "uniform", "resample"]
seed = [1, 2, 3]
[asha]
min_steps = 10
`

// The plan: rungs min_steps·η^k below finetune.steps, then finetune.steps;
// each member's stops are its rungs rounded up to its next refresh; the
// defaults (η 3, min_steps finetune.steps/η²) where [asha] is silent.
func TestPlanASHA(t *testing.T) {
	for _, c := range []struct {
		name, text  string
		rungs       []int
		stops       []int // member 0's
		eta, minSt  int
		metricName  string
		stopAt0     int // StopAt(0, 0)
		stopAtFinal int
	}{
		{"given", ashaSpec, []int{10, 30, 90, 270}, []int{10, 30, 90, 270}, 3, 10, "", 11, 0},
		{"defaults", "[base]\n\"finetune.steps\" = 300\n\"finetune.refresh\" = 25\n[axes]\nseed = [1, 2]\n", []int{34, 102, 300}, []int{50, 125, 300}, 3, 34, "", 51, 0},
		{"eta 2, a metric", "[base]\n\"finetune.steps\" = 100\n\"finetune.refresh\" = 10\n[axes]\nseed = [1, 2]\n[asha]\nmin_steps = 15\neta = 2\nmetric = \"hmean\"\n", []int{15, 30, 60, 100}, []int{20, 30, 60, 100}, 2, 15, "hmean", 21, 0},
	} {
		s := sweeptest.NewASHA(t, c.text)
		a := s.ASHA
		if !reflect.DeepEqual(a.Rungs, c.rungs) || !reflect.DeepEqual(a.Stops[0], c.stops) || a.Eta != c.eta || a.MinSteps != c.minSt || a.Metric != c.metricName {
			t.Errorf("%s: plan %+v, want rungs %v, stops %v, eta %d, min_steps %d, metric %q", c.name, a, c.rungs, c.stops, c.eta, c.minSt, c.metricName)
		}
		if got := a.StopAt(0, 0); got != c.stopAt0 {
			t.Errorf("%s: StopAt(0, 0) = %d, want %d (one step past the rung's refresh)", c.name, got, c.stopAt0)
		}
		if got := a.StopAt(0, a.Top()); got != c.stopAtFinal {
			t.Errorf("%s: StopAt at the last rung = %d, want 0 (the end)", c.name, got)
		}
		if a.Align != search.AlignCommon {
			t.Errorf("%s: align %q, want common", c.name, a.Align)
		}
		// sweep.json keeps the plan.
		back, err := sweep.Load(s.Dir)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back.ASHA, a) {
			t.Errorf("%s: sweep.json gives back %+v, want %+v", c.name, back.ASHA, a)
		}
	}
}

// Members that refresh every 25 and every 50 steps: aligned in common,
// every member is ranked at the same steps (the rung up to a multiple of
// 50); aligned per member, one refreshing every 50 is ranked later for
// the same rung (150 against 125), after more steps.
func TestASHAAlign(t *testing.T) {
	spec := "[base]\n\"finetune.steps\" = 1000\n[axes]\n\"finetune.refresh\" = [25, 50]\n[asha]\nmin_steps = 125\neta = 4\n"
	for _, c := range []struct {
		align  string
		stops  [][]int
		stopAt int // member 1's first stop
	}{
		{"", [][]int{{150, 500, 1000}, {150, 500, 1000}}, 151},
		{"align = \"member\"\n", [][]int{{125, 500, 1000}, {150, 500, 1000}}, 151},
	} {
		a := sweeptest.NewASHA(t, spec+c.align).ASHA
		if !reflect.DeepEqual(a.Rungs, []int{125, 500, 1000}) || !reflect.DeepEqual(a.Stops, c.stops) || a.StopAt(1, 0) != c.stopAt {
			t.Errorf("%q: rungs %v, stops %v, StopAt(1, 0) %d; want rungs [125 500 1000], stops %v", c.align, a.Rungs, a.Stops, a.StopAt(1, 0), c.stops)
		}
	}
}

// Bad [asha] tables and specs that successive halving cannot run are
// refused naming the spec and the key.
func TestASHABadSpecs(t *testing.T) {
	base := "[base]\n\"finetune.steps\" = 300\n\"finetune.refresh\" = 25\n"
	for _, c := range []struct{ name, text, want string }{
		{"eta 1", base + "[axes]\nseed = [1]\n[asha]\neta = 1\n", "bad.toml: [asha] eta 1: want an integer ≥ 2"},
		{"min_steps 0", base + "[axes]\nseed = [1]\n[asha]\nmin_steps = 0\n", "bad.toml: [asha] min_steps 0: want a number of steps ≥ 1"},
		{"unknown metric", base + "[axes]\nseed = [1]\n[asha]\nmetric = \"min-recal\"\n", `bad.toml: [asha] metric "min-recal": unknown objective "min-recal"`},
		{"unknown key", base + "[axes]\nseed = [1]\n[asha]\nrungs = [1, 2]\n", "bad.toml: [asha] rungs: unknown key (it has min_steps, eta, metric and align)"},
		{"unknown align", base + "[axes]\nseed = [1]\n[asha]\nalign = \"rung\"\n", `bad.toml: [asha] align "rung": want common (every member ranked at the same step) or member (at its own next refresh)`},
		{"eta a string", base + "[axes]\nseed = [1]\n[asha]\neta = \"3\"\n", "asha.eta"},
	} {
		_, err := search.Parse([]byte(c.text), "bad.toml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	for _, c := range []struct{ name, text, want string }{
		{"steps vary", "[base]\n\"finetune.refresh\" = 10\n[axes]\n\"finetune.steps\" = [100, 200]\n",
			"bad.toml: finetune.steps: the members run 100, 200 steps; successive halving gives every member one budget: set finetune.steps in [base]"},
		{"objectives vary", base + "[axes]\n\"finetune.objective\" = [\"min-recall\", \"hmean\"]\n",
			`bad.toml: [asha] metric: the members optimize hmean, min-recall, whose ψ are not comparable: name a metric to rank them by, an objective or a reported metric (e.g. metric = "hmean" or metric = "metrics/min_recall")`},
		{"min_steps too many", base + "[axes]\nseed = [1]\n[asha]\nmin_steps = 300\n", "bad.toml: [asha] min_steps 300: want fewer than finetune.steps (300)"},
		{"rungs within a refresh", "[base]\n\"finetune.steps\" = 300\n\"finetune.refresh\" = 100\n[axes]\nseed = [1]\n[asha]\nmin_steps = 10\n",
			"bad.toml: [asha] min_steps 10: member 0 is ranked at refreshes 100 steps apart, so its rungs 10 and 30 both end at step 100"},
	} {
		spec, err := search.Parse([]byte(c.text), "bad.toml")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		s, err := sweep.Plan(t.TempDir(), spec, search.ExecLocal, t.TempDir())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if _, err := search.PlanASHA(spec, s.Members); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// Objectives that vary are ranked by a metric named.
	spec, err := search.Parse([]byte(base+"[axes]\n\"finetune.objective\" = [\"min-recall\", \"hmean\"]\n[asha]\nmetric = \"hmean\"\n"), "ok.toml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := sweep.Plan(t.TempDir(), spec, search.ExecLocal, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if s.ASHA, err = search.PlanASHA(spec, s.Members); err != nil {
		t.Errorf("a named metric over two objectives: %v", err)
	}
}

// drive plays a schedule as an executor running one member at a time
// would, each member reporting psi[member][rung], until it is complete or
// after at most steps decisions; it returns the decisions' summaries.
func drive(t *testing.T, s *sweep.Sweep, psi func(i, k int) float64, steps int) []string {
	t.Helper()
	for n := 0; n < steps; n++ {
		sc, err := s.Schedule() // read back each time: the log is the state
		if err != nil {
			t.Fatal(err)
		}
		if fl := sc.InFlight(); len(fl) > 0 {
			j := fl[0]
			if err := sc.Report(j.Member, j.Rung, s.ASHA.Stops[j.Member][j.Rung], psi(j.Member, j.Rung)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		d, ok := sc.Next()
		if !ok {
			break
		}
		if err := sc.Take(d); err != nil {
			t.Fatal(err)
		}
	}
	sc, err := s.Schedule()
	if err != nil {
		t.Fatal(err)
	}
	return decisions(sc)
}

func decisions(sc *sweep.Schedule) []string {
	var out []string
	for _, d := range sc.Decisions {
		if d.Op == sweep.OpReport {
			out = append(out, fmt.Sprintf("report %d@%d ψ %g (step %d)", d.Member, d.Rung, d.PsiValue(), d.Step))
		} else {
			out = append(out, fmt.Sprintf("send %d@%d stop %d rank %d/%d", d.Member, d.Rung, d.StopAt, d.Rank, d.Of))
		}
	}
	return out
}

// psiTable gives member i at rung k ψ (i+1)/10 + k, but member 4 the best
// from rung 1 on, and member 7 a ψ that is not a number at rung 0.
func psiTable(i, k int) float64 {
	switch {
	case i == 7 && k == 0:
		return math.NaN()
	case i == 4 && k > 0:
		return 10 + float64(k)
	}
	return float64(i+1)/10 + float64(k)
}

// ASHA's decisions, one member at a time: a member starts while no one is
// promotable; a rung promotes the top ⌊n/η⌋ of the n that reached it as
// they report (a promotion taken is never undone); once every member
// started and none is in flight, a rung that would promote none promotes
// its best. ψ that is not a number ranks last.
func TestScheduleDecisions(t *testing.T) {
	s := sweeptest.NewASHA(t, ashaSpec)
	got := drive(t, s, psiTable, 1000)
	want := []string{
		"send 0@0 stop 11 rank 0/0", "report 0@0 ψ 0.1 (step 10)",
		"send 1@0 stop 11 rank 0/0", "report 1@0 ψ 0.2 (step 10)",
		"send 2@0 stop 11 rank 0/0", "report 2@0 ψ 0.3 (step 10)",
		// 3 at rung 0: the best goes on.
		"send 2@1 stop 31 rank 1/3", "report 2@1 ψ 1.3 (step 30)",
		// Each new member is the best so far at rung 0, and goes on.
		"send 3@0 stop 11 rank 0/0", "report 3@0 ψ 0.4 (step 10)",
		"send 3@1 stop 31 rank 1/4", "report 3@1 ψ 1.4 (step 30)",
		"send 4@0 stop 11 rank 0/0", "report 4@0 ψ 0.5 (step 10)",
		"send 4@1 stop 31 rank 1/5", "report 4@1 ψ 11 (step 30)",
		// 3 at rung 1: the best (member 4) goes on to rung 2.
		"send 4@2 stop 91 rank 1/3", "report 4@2 ψ 12 (step 90)",
		"send 5@0 stop 11 rank 0/0", "report 5@0 ψ 0.6 (step 10)",
		"send 5@1 stop 31 rank 1/6", "report 5@1 ψ 1.6 (step 30)",
		"send 6@0 stop 11 rank 0/0", "report 6@0 ψ 0.7 (step 10)",
		"send 6@1 stop 31 rank 1/7", "report 6@1 ψ 1.7 (step 30)",
		// ψ that is not a number ranks last: 8 at rung 0, the top 2 (6
		// and 5) have gone on; so has rung 1's best.
		"send 7@0 stop 11 rank 0/0", "report 7@0 ψ NaN (step 10)",
		"send 8@0 stop 11 rank 0/0", "report 8@0 ψ 0.9 (step 10)",
		"send 8@1 stop 31 rank 1/9", "report 8@1 ψ 1.9 (step 30)",
		// 6 at rung 1: the top 2 are 4 and 8.
		"send 8@2 stop 91 rank 2/6", "report 8@2 ψ 2.9 (step 90)",
		// Every member started and none is in flight: rung 2, whose 2
		// would promote none, sends its best to the end.
		"send 4@3 stop 0 rank 1/2", "report 4@3 ψ 13 (step 270)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decisions:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	sc, err := s.Schedule()
	if err != nil {
		t.Fatal(err)
	}
	if !sc.Complete() || len(sc.InFlight()) != 0 {
		t.Errorf("complete %v, in flight %v; want a complete schedule", sc.Complete(), sc.InFlight())
	}
	if sc.Reached(4) != 3 || sc.Reached(7) != 0 || sc.Sent(4) != -1 {
		t.Errorf("reached: member 4 rung %d, member 7 rung %d; want 3 and 0", sc.Reached(4), sc.Reached(7))
	}
	// A decision the schedule cannot take is refused and not written.
	if err := sc.Take(sweep.Decision{Op: sweep.OpSend, Member: 0, Rung: 2}); err == nil {
		t.Error("sending member 0 to rung 2 without rung 1: no error")
	}
	if err := sc.Report(0, 1, 30, 1); err == nil {
		t.Error("a report of a member never sent: no error")
	}
	if again, _ := s.Schedule(); len(again.Decisions) != len(got) {
		t.Errorf("refused decisions were written: %d lines, want %d", len(again.Decisions), len(got))
	}
}

// The log is the schedule: one interrupted after some decisions (a member
// in flight, and a torn last line from a process killed as it wrote)
// goes on to the same decisions as one never interrupted.
func TestScheduleResumes(t *testing.T) {
	whole := drive(t, sweeptest.NewASHA(t, ashaSpec), psiTable, 1000)
	s := sweeptest.NewASHA(t, ashaSpec)
	first := drive(t, s, psiTable, 15) // ends with member 4 sent to rung 1, not reported
	if !reflect.DeepEqual(first, whole[:len(first)]) || first[len(first)-1] != "send 4@1 stop 31 rank 1/5" {
		t.Fatalf("the first part:\n%s", strings.Join(first, "\n"))
	}
	path := filepath.Join(s.Dir, sweep.ScheduleName)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"op":"report","member":4,"ru`)
	f.Close()
	sc, err := s.Schedule()
	if err != nil {
		t.Fatalf("a torn last line: %v", err)
	}
	if fl := sc.InFlight(); len(fl) != 1 || fl[0] != (sweep.Assignment{Member: 4, Rung: 1}) {
		t.Errorf("in flight %v, want member 4 to rung 1", fl)
	}
	if got := drive(t, s, psiTable, 1000); !reflect.DeepEqual(got, whole) {
		t.Errorf("resumed:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(whole, "\n"))
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"ru{`) || strings.Count(string(b), "\n") != len(whole) {
		t.Errorf("the torn line was not cut before the next one:\n%s", b)
	}

	// A line in the middle that is no decision is damage, named.
	os.WriteFile(path, []byte("{\"op\":\"send\",\"member\":0,\"rung\":0}\nnot json\n{}\n"), 0o644)
	if _, err := s.Schedule(); !errors.Is(err, runs.ErrDamaged) || !strings.Contains(err.Error(), "asha.log:2 is damaged") {
		t.Errorf("a damaged line: %v", err)
	}
	os.WriteFile(path, []byte("{\"op\":\"report\",\"member\":0,\"rung\":0}\n"), 0o644)
	if _, err := s.Schedule(); !errors.Is(err, runs.ErrDamaged) {
		t.Errorf("a report of a member never sent: %v", err)
	}
}

// stoppedRun records a run of member i stopped at step at, with
// refreshes every 10 steps up to it, ψ of the optimized objective
// psi(step) and of hmean psi(step)/2, and min coverage step/1000.
func stoppedRun(t *testing.T, s *sweep.Sweep, i, at int, psi func(step int) float64) {
	t.Helper()
	rec, err := record.New(s.Root, s.Members[i].Run, "seed = 1\n", record.Options{}, runs.Meta{})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.LogStart(record.Start{Total: 270, K: 2}); err != nil {
		t.Fatal(err)
	}
	st := loop.NewStream()
	for step := 0; step < at; step += 10 {
		rep := metric.Report{K: 2, Prior: []float64{0.5, 0.5}, Recall: []float64{0.5, 0.5}, Coverage: []float64{0.5, 0.5}, MinCoverage: float64(step) / 1000}
		objs := make([]float64, len(metric.Objectives()))
		objs[metric.HMean.Index()] = psi(step) / 2
		rs := &loop.Refresh{Step: step, K: 2, Psi: psi(step), Report: rep, Objectives: objs, G: []float64{0, 1, 1, 0}, P: []float64{0, 0.5, 0.5, 0}}
		st.Publish(loop.Snapshot{Kind: loop.KindRefresh, Step: step, Total: 270, State: loop.Running, Hyper: loop.DefaultHyper(), Refresh: rs})
	}
	st.Publish(loop.Snapshot{Kind: loop.KindFinal, Step: at, Total: 270, State: loop.Stopped, Hyper: loop.DefaultHyper(), Summary: &loop.Summary{Steps: at, Objective: metric.MinRecall}})
	st.Close()
	if err := rec.Follow(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	rec.Writer().Close()
}

// A member is ranked by ψ at its last refresh at or before its rung's
// (of the metric named, else of its optimized objective), once its run
// has got there.
func TestRungPsi(t *testing.T) {
	s := sweeptest.NewASHA(t, ashaSpec)
	stoppedRun(t, s, 0, 31, func(step int) float64 { return float64(step) / 100 })
	for _, c := range []struct {
		upTo, at int
		psi      float64
	}{{10, 10, 0.1}, {30, 30, 0.3}, {25, 20, 0.2}} {
		psi, at, err := s.RungPsi(0, c.upTo)
		if err != nil || at != c.at || psi != c.psi {
			t.Errorf("up to %d: ψ %v at %d (%v), want %v at %d", c.upTo, psi, at, err, c.psi, c.at)
		}
	}
	if _, _, err := s.RungPsi(0, 90); err == nil || !strings.Contains(err.Error(), "stands at step 31, before its rung's refresh at step 90") {
		t.Errorf("a rung not reached: %v", err)
	}
	if _, _, err := s.RungPsi(1, 10); err == nil || !strings.Contains(err.Error(), "member 1 has no run") {
		t.Errorf("a member never run: %v", err)
	}
	s.ASHA.Metric = "hmean"
	if psi, at, err := s.RungPsi(0, 30); err != nil || at != 30 || psi != 0.15 {
		t.Errorf("metric hmean: ψ %v at %d (%v), want 0.15 at 30", psi, at, err)
	}
	// A reported metric of the catalogue (search.RankMetric's name).
	s.ASHA.Metric = "metrics/min_coverage"
	if v, at, err := s.RungPsi(0, 25); err != nil || at != 20 || v != 0.02 {
		t.Errorf("metric metrics/min_coverage: %v at %d (%v), want 0.02 at 20", v, at, err)
	}
}

// status shows each member's rung and a member stopped at its rung as
// "at a rung", not failed; the report lists the decisions and the steps.
func TestScheduleStatusReport(t *testing.T) {
	s := sweeptest.NewASHA(t, ashaSpec)
	sc, err := s.Schedule()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []sweep.Decision{{Op: sweep.OpSend, Member: 0, Rung: 0, StopAt: 11}, {Op: sweep.OpSend, Member: 1, Rung: 0, StopAt: 11}} {
		if err := sc.Take(d); err != nil {
			t.Fatal(err)
		}
	}
	stoppedRun(t, s, 0, 11, func(step int) float64 { return 0.25 })
	if err := sc.Report(0, 0, 10, 0.25); err != nil {
		t.Fatal(err)
	}
	stoppedRun(t, s, 1, 5, func(step int) float64 { return 0.2 }) // interrupted on its way
	st, err := sweep.NewReader(s, nil).Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range []struct {
		rung string
		cat  sweep.Category
	}{{"10", sweep.AtRung}, {"→10", sweep.Failed}, {"", sweep.Pending}} {
		if m := st.Members[i]; m.Rung != w.rung || m.Category != w.cat {
			t.Errorf("member %d: rung %q %s, want %q %s", i, m.Rung, m.Category, w.rung, w.cat)
		}
	}
	if got := st.Resumable(); !reflect.DeepEqual(got, []int{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Errorf("resumable %v: a member at its rung is not", got)
	}
	var tbl strings.Builder
	if err := st.WriteTable(&tbl); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"RUNG", "asha: rungs at 10, 30, 90, 270 steps, eta 3; schedule not complete; 16 steps of the grid's 2430\n",
		"9 members: 0 finished, 0 running, 7 pending, 1 failed, 1 at a rung\n"} {
		if !strings.Contains(tbl.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, tbl.String())
		}
	}
	res, err := s.Results()
	if err != nil {
		t.Fatal(err)
	}
	md := res.Schedule.Markdown()
	for _, want := range []string{
		"Rungs at 10, 30, 90, 270 steps (min_steps 10, eta 3).",
		"Compute: 16 steps, 1% of the grid's 2430 (9 members × 270 steps, each run to its end).",
		"| 0 | selmix | 1 | 0.2500 |  |  |  |\n",
		"| 1 | selmix | 2 | … |  |  |  |\n",
		"1. member 0 (policy=selmix seed=1) started\n2. member 1 (policy=selmix seed=2) started\n3. member 0 (policy=selmix seed=1) reached rung 0 (10 steps): ψ 0.2500 at step 10\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

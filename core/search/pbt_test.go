package search

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const pbtSpec = `
name = "pop"
[base]
"finetune.steps" = 400
"finetune.refresh" = 25
[axes]
"finetune.s" = [0.5, 1, 2, 4]
"finetune.multipliers" = ["memoryless", "integral"]
seed = [1]
[pbt]
interval = 100
`

func planPBT(t *testing.T, text string) (*PBT, error) {
	t.Helper()
	s, err := Parse([]byte(text), "pop.toml")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := s.Members("pop-0000")
	if err != nil {
		t.Fatal(err)
	}
	return PlanPBT(s, ms)
}

// The plan: the spec's finetune keys a run may change live and that keep
// ψ one function (s; not multipliers, which redefines ψ), with the values
// the spec gives them, generations of the interval up to the steps.
func TestPlanPBT(t *testing.T) {
	p, err := planPBT(t, strings.Replace(pbtSpec, "\"finetune.multipliers\" = [\"memoryless\", \"integral\"]\n", "\"finetune.beta_min\" = [0.5, 0.7]\n", 1))
	if err != nil {
		t.Fatal(err)
	}
	want := &PBT{Interval: 100, Steps: 400, Quantile: 0.25, Explore: ExplorePerturb, Keys: []string{"beta_min", "s"},
		Choices: map[string][]string{"s": {"0.5", "1", "2", "4"}, "beta_min": {"0.5", "0.7"}}, Seed: 1}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("plan\n got %+v\nwant %+v", p, want)
	}
	if p.Gens() != 4 || p.End(0) != 100 || p.End(3) != 400 || p.StopAt(0) != 101 || p.StopAt(2) != 301 || p.StopAt(3) != 0 {
		t.Errorf("gens %d, ends %d %d, stops %d %d %d", p.Gens(), p.End(0), p.End(3), p.StopAt(0), p.StopAt(2), p.StopAt(3))
	}
	if err := p.Check(8); err != nil {
		t.Errorf("Check: %v", err)
	}
	// The default interval: a quarter of the steps, up to a refresh.
	p, err = planPBT(t, strings.Replace(pbtSpec, "interval = 100\n", "", 1))
	if err != nil || p.Interval != 100 || !slices.Equal(p.Keys, []string{"s"}) {
		t.Errorf("default interval %v, keys %v (%v); want 100, [s]", p.Interval, p.Keys, err)
	}
}

func TestPBTBadSpecs(t *testing.T) {
	for _, c := range []struct{ from, to, want string }{
		{"interval = 100", "interval = 110", "pop.toml: [pbt] interval 110: the members refresh every 25 steps (finetune.refresh): want a multiple of it, so a refresh ranks each generation"},
		{"interval = 100", "interval = 400", "pop.toml: [pbt] interval 400: want fewer than finetune.steps (400)"},
		{"interval = 100", "keys = [\"objective\"]", "pop.toml: [pbt] keys: finetune.objective: changes what ψ is, so members could not be ranked by it"},
		{"interval = 100", "keys = [\"refresh\"]", "pop.toml: [pbt] keys: finetune.refresh: a refresh ranks each generation; keep the interval fixed"},
		{"interval = 100", "explore = \"resample\"\nkeys = [\"lr\"]", "pop.toml: [pbt] explore = resample: the spec gives finetune.lr 0 value(s): want at least 2 to draw from"},
		{"\"finetune.s\" = [0.5, 1, 2, 4]", "\"finetune.steps\" = [300, 400]", "pop.toml: finetune.steps: the members run 300, 400 steps; population-based training gives every member one budget: set finetune.steps in [base]"},
		{"\"finetune.s\" = [0.5, 1, 2, 4]", "\"finetune.objective\" = [\"min-recall\", \"hmean\"]", `pop.toml: [pbt] metric: the members optimize hmean, min-recall, whose ψ are not comparable: name a metric to rank them by, an objective or a reported metric (e.g. metric = "hmean" or metric = "metrics/min_recall")`},
	} {
		_, err := planPBT(t, strings.Replace(pbtSpec, c.from, c.to, 1))
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: got %v\nwant %s", c.to, err, c.want)
		}
	}
	for _, c := range []struct{ table, want string }{
		{"quantile = 0.6", "pop.toml: [pbt] quantile 0.6: want a share in (0, 0.5] (the worst share copies the best share)"},
		{"explore = \"mutate\"", `pop.toml: [pbt] explore "mutate": want perturb, resample or forecast`},
		{"colour = 1", "pop.toml: [pbt] colour: unknown key (it has interval, quantile, explore, candidates, keys, metric and seed)"},
		{"candidates = 4", `pop.toml: [pbt] candidates: only explore = "forecast" ranks candidates`},
		{"explore = \"forecast\"\ncandidates = 1", "pop.toml: [pbt] candidates 1: want 2 to 64 perturbations to rank"},
	} {
		_, err := Parse([]byte(strings.Replace(pbtSpec, "interval = 100", c.table, 1)), "pop.toml")
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: got %v\nwant %s", c.table, err, c.want)
		}
	}
}

// Decide, against a ranking written apart: each of the worst ⌊q·n⌋
// copies one of as many best, and takes its settings perturbed by 0.8 or
// 1.2 (integers by at least one), a named choice kept or drawn from the
// spec's values; draws are the same for the same generation, member and
// seed, and differ across generations.
func TestPBTDecide(t *testing.T) {
	p := &PBT{Interval: 100, Steps: 400, Quantile: 0.25, Explore: ExplorePerturb, Keys: []string{"adapt", "batch", "s"},
		Choices: map[string][]string{"adapt": {`"none"`, `"lr"`}}, Seed: 7}
	psi := []float64{0.3, math.NaN(), 0.9, 0.1, 0.5, 0.8, 0.2, 0.7}
	cur := make([]map[string]string, len(psi))
	for i := range cur {
		cur[i] = map[string]string{"adapt": "none", "batch": strconv.Itoa(2 + i), "s": strconv.Itoa(i + 1)}
	}
	// Ranked by hand: 2 (0.9), 5 (0.8) best; 3 (0.1) and 1 (NaN) worst.
	got := decide(t, p, 1, psi, cur)
	if len(got) != 2 || got[0].Member != 1 || got[1].Member != 3 {
		t.Fatalf("exploits %+v: want members 1 and 3", got)
	}
	for _, e := range got {
		if e.From != 2 && e.From != 5 {
			t.Errorf("member %d copies %d: want 2 or 5", e.Member, e.From)
		}
		if len(e.Sets) != 3 {
			t.Fatalf("sets %v", e.Sets)
		}
		src := cur[e.From]
		s0, _ := strconv.ParseFloat(src["s"], 64)
		s1, err := strconv.ParseFloat(strings.TrimPrefix(e.Sets[2], "finetune.s="), 64)
		if err != nil || (math.Abs(s1-0.8*s0) > 1e-12 && math.Abs(s1-1.2*s0) > 1e-12) {
			t.Errorf("member %d: %s from s=%v: want 0.8 or 1.2 times", e.Member, e.Sets[2], s0)
		}
		b0, _ := strconv.Atoi(src["batch"])
		b1, err := strconv.Atoi(strings.TrimPrefix(e.Sets[1], "finetune.batch="))
		if err != nil || b1 == b0 || b1 < 1 {
			t.Errorf("member %d: %s from batch=%d: want another integer ≥ 1", e.Member, e.Sets[1], b0)
		}
		if a := strings.TrimPrefix(e.Sets[0], "finetune.adapt="); a != "none" && a != "lr" {
			t.Errorf("member %d: %s: want a value of the spec", e.Member, e.Sets[0])
		}
	}
	if again := decide(t, p, 1, psi, cur); !reflect.DeepEqual(again, got) {
		t.Errorf("decided again %+v, first %+v", again, got)
	}
	differ := false
	for g := 2; g < 12 && !differ; g++ {
		differ = !reflect.DeepEqual(decide(t, p, g, psi, cur), got)
	}
	if !differ {
		t.Error("every generation draws the same exploits and explores")
	}
	// Two members: one copies the other.
	two := decide(t, p, 0, []float64{0.2, 0.4}, cur[:2])
	if len(two) != 1 || two[0].Member != 0 || two[0].From != 1 {
		t.Errorf("a population of two: %+v, want member 0 to copy 1", two)
	}
	// resample draws from the spec's values; β_min past 1 keeps the copy's.
	r := &PBT{Quantile: 0.5, Explore: ExploreResample, Keys: []string{"s"}, Choices: map[string][]string{"s": {"3", "5"}}}
	for _, e := range decide(t, r, 0, []float64{1, 0}, cur[:2]) {
		if e.Sets[0] != "finetune.s=3" && e.Sets[0] != "finetune.s=5" {
			t.Errorf("resample: %v", e.Sets)
		}
	}
	b := &PBT{Quantile: 0.5, Explore: ExplorePerturb, Keys: []string{"beta_min"}}
	for g := range 8 {
		e := decide(t, b, g, []float64{1, 0}, []map[string]string{{"beta_min": "0.9"}, {"beta_min": "0.9"}})[0]
		if e.Sets[0] != "finetune.beta_min=0.9" && e.Sets[0] != "finetune.beta_min=0.72" {
			t.Errorf("β_min 0.9 explored to %v: want 0.72 or kept", e.Sets)
		}
	}
}

// TestPBTResampleDist checks that resample draws a key the spec gives a
// distribution from it, and perturb still scales it.
func TestPBTResampleDist(t *testing.T) {
	spec, err := Parse([]byte(`
[base]
"finetune.steps" = 400
"finetune.refresh" = 25
[axes]
"finetune.s" = { log_uniform = [0.5, 4.0] }
"finetune.lr" = [0.001, 0.01]
[random]
members = 6
[pbt]
explore = "resample"
`), "pop.toml")
	if err != nil {
		t.Fatal(err)
	}
	ms, _, err := spec.Expand("pop-0000", PopulationBased)
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanPBT(spec, ms)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Keys, []string{"lr", "s"}) || p.Dists["s"] != (Dist{Kind: DistLogUniform, Lo: 0.5, Hi: 4}) || len(p.Choices["lr"]) != 2 {
		t.Fatalf("plan keys %v, dists %v, choices %v", p.Keys, p.Dists, p.Choices)
	}
	seen := map[string]bool{}
	for g := range 40 {
		cur := make([]map[string]string, 6)
		for i := range cur {
			cur[i] = map[string]string{"s": "1", "lr": "0.001"}
		}
		for _, e := range decide(t, p, g, []float64{6, 5, 4, 3, 2, 1}, cur) {
			for _, st := range e.Sets {
				if v, ok := strings.CutPrefix(st, "finetune.s="); ok {
					x, err := strconv.ParseFloat(v, 64)
					if err != nil || x < 0.5 || x > 4 {
						t.Errorf("generation %d: resampled s=%s outside [0.5, 4]", g, v)
					}
					seen[v] = true
				}
			}
		}
	}
	if len(seen) < 20 {
		t.Errorf("40 generations resampled %d distinct values of s: want a continuous draw", len(seen))
	}
}

// decide is p.Decide of an explore that forecasts nothing.
func decide(t *testing.T, p *PBT, g int, psi []float64, cur []map[string]string) []Exploit {
	t.Helper()
	out, err := p.Decide(g, psi, cur, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// explore = forecast: the candidates are the perturbation perturb takes
// and more drawn as perturb draws them, distinct; the one the score
// forecasts highest is taken (the first among equals, the first where
// none has a forecast), and the score's error is Decide's.
func TestPBTForecastExplore(t *testing.T) {
	perturb, err := planPBT(t, pbtSpec)
	if err != nil {
		t.Fatal(err)
	}
	fc, err := planPBT(t, strings.Replace(pbtSpec, "interval = 100", "interval = 100\nexplore = \"forecast\"\ncandidates = 5", 1))
	if err != nil {
		t.Fatal(err)
	}
	if fc.Candidates != 5 || fc.Explore != ExploreForecast {
		t.Fatalf("plan %+v", fc)
	}
	psi := []float64{0.1, 0.9, 0.5, 0.3, 0.7, 0.2, 0.6, 0.4}
	cur := make([]map[string]string, 8)
	for i := range cur {
		cur[i] = map[string]string{"s": strconv.Itoa(i + 1), "multipliers": "integral"}
	}
	// A forecast written apart: the larger s, the larger Δψ.
	var calls []int
	byS := func(_, from int, cands [][]string) ([]float64, error) {
		calls = append(calls, from)
		out := make([]float64, len(cands))
		for i, c := range cands {
			v, _ := strings.CutPrefix(c[0], "finetune.s=")
			out[i], _ = strconv.ParseFloat(v, 64)
		}
		return out, nil
	}
	want := decide(t, perturb, 2, psi, cur)
	got, err := fc.Decide(2, psi, cur, byS)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || !slices.Equal(calls, []int{got[0].From, got[1].From}) {
		t.Fatalf("%d exploits (want %d), score called for %v", len(got), len(want), calls)
	}
	for k, e := range got {
		if e.Member != want[k].Member || e.From != want[k].From {
			t.Errorf("exploit %d: member %d from %d; perturb's: %d from %d", k, e.Member, e.From, want[k].Member, want[k].From)
		}
		if len(e.Ranked) != 5 || !slices.Equal(e.Ranked[0].Sets, want[k].Sets) {
			t.Errorf("exploit %d: %d candidates, the first %v; want 5, the first perturb's %v", k, len(e.Ranked), e.Ranked[0].Sets, want[k].Sets)
		}
		best := math.Inf(-1)
		for i, c := range e.Ranked {
			best = max(best, c.Forecast)
			for _, d := range e.Ranked[:i] {
				if slices.Equal(c.Sets, d.Sets) {
					t.Errorf("exploit %d: candidate %v twice", k, c.Sets)
				}
			}
		}
		if v, _ := strings.CutPrefix(e.Sets[0], "finetune.s="); v != strconv.FormatFloat(best, 'g', 12, 64) {
			t.Errorf("exploit %d: took %v; the highest forecast is s=%v among %v", k, e.Sets, best, e.Ranked)
		}
	}
	// No forecast anywhere: the first, perturb's own.
	none := func(_, _ int, cands [][]string) ([]float64, error) {
		out := make([]float64, len(cands))
		for i := range out {
			out[i] = math.NaN()
		}
		return out, nil
	}
	if got, err := fc.Decide(2, psi, cur, none); err != nil || !slices.Equal(got[0].Sets, want[0].Sets) {
		t.Errorf("no forecasts: %v (%v), want perturb's %v", got, err, want[0].Sets)
	}
	fail := func(int, int, [][]string) ([]float64, error) { return nil, errors.New("no checkpoint") }
	if _, err := fc.Decide(2, psi, cur, fail); err == nil || !strings.Contains(err.Error(), "no checkpoint") {
		t.Errorf("a failing score: %v", err)
	}
}

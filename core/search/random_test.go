package search

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const drawnSpec = `
name = "drawn"

[base]
"finetune.steps" = 300
finetune.refresh = 25
record.plots = false

[axes]
"finetune.s" = { log_uniform = [0.5, 4.0] }
"finetune.lr" = [0.001, 0.01]
"finetune.refresh" = { uniform = [10, 50] }
seed = [1, 2, 3]

[random]
members = 5
seed = 7
`

func mustParse(t *testing.T, text string) *Spec {
	t.Helper()
	s, err := Parse([]byte(text), "drawn.toml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// value is member m's value of key, as its --set gives it.
func value(m Member, key string) string {
	for _, st := range m.Sets {
		if k, v, _ := strings.Cut(st, "="); k == key {
			return v
		}
	}
	return ""
}

func TestDrawDistributions(t *testing.T) {
	s := mustParse(t, drawnSpec)
	if d := s.Axes[0].Dist; d == nil || *d != (Dist{Kind: DistLogUniform, Lo: 0.5, Hi: 4}) {
		t.Fatalf("s's distribution %+v", d)
	}
	if d := s.Axes[2].Dist; d == nil || *d != (Dist{Kind: DistUniform, Lo: 10, Hi: 50, Int: true}) {
		t.Fatalf("refresh's distribution %+v", d)
	}
	ms, dr, err := s.Expand("drawn-0000", Random)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 15 || dr.Points != 5 || dr.Paired != "seed" || dr.Seed != 7 {
		t.Fatalf("%d members, plan %+v; want 5 points × 3 seeds", len(ms), dr)
	}
	for p := range 5 {
		// Each point runs on seeds 1, 2, 3 with the same drawn values.
		for j := range 3 {
			m := ms[3*p+j]
			if value(m, "seed") != strconv.Itoa(j+1) || value(m, "finetune.s") != value(ms[3*p], "finetune.s") || value(m, "finetune.refresh") != value(ms[3*p], "finetune.refresh") {
				t.Errorf("member %d: %v", m.Index, m.Sets)
			}
		}
		m := ms[3*p]
		x, err := strconv.ParseFloat(value(m, "finetune.s"), 64)
		if err != nil || x < 0.5 || x > 4 || len(strings.TrimLeft(strings.ReplaceAll(value(m, "finetune.s"), ".", ""), "0")) > 4 {
			t.Errorf("member %d: s=%s: want a value in [0.5, 4] of 4 significant figures", m.Index, value(m, "finetune.s"))
		}
		r, err := strconv.Atoi(value(m, "finetune.refresh"))
		if err != nil || r < 10 || r > 50 {
			t.Errorf("member %d: refresh=%s: want an integer in [10, 50]", m.Index, value(m, "finetune.refresh"))
		}
		if v := value(m, "finetune.lr"); v != "0.001" && v != "0.01" {
			t.Errorf("member %d: lr=%s", m.Index, v)
		}
		if m.Vary[0] != value(m, "finetune.s") || m.Run != "drawn-0000-"+strconv.Itoa(3*p) {
			t.Errorf("member %d: columns %v, run %s", m.Index, m.Vary, m.Run)
		}
	}
	// The draws are the seed's: again the same, another seed others.
	again, _, _ := s.Expand("drawn-0000", Random)
	if !slices.EqualFunc(ms, again, func(a, b Member) bool { return slices.Equal(a.Sets, b.Sets) }) {
		t.Error("the same spec drew other members")
	}
	other := mustParse(t, strings.Replace(drawnSpec, "seed = 7", "seed = 8", 1))
	ms8, _, _ := other.Expand("drawn-0000", Random)
	if value(ms8[0], "finetune.s") == value(ms[0], "finetune.s") {
		t.Error("seed 8 drew seed 7's first s")
	}
	if got := dr.Describe(len(ms)); got != "5 points drawn at random (members 5, seed 7), each on every seed: 15 members; finetune.refresh ~ uniform(10, 50), finetune.s ~ log_uniform(0.5, 4)" {
		t.Errorf("Describe: %s", got)
	}
}

// TestDrawLaw checks the draws against the distributions' own CDFs
// (Kolmogorov–Smirnov at the 1% level) and integer draws' ends.
func TestDrawLaw(t *testing.T) {
	const n = 2000
	s := mustParse(t, `
[base]
"finetune.steps" = 300
[axes]
"finetune.s" = { log_uniform = [0.5, 4.0] }
"finetune.beta_min" = { uniform = [0.1, 0.9] }
"finetune.refresh" = { uniform = [10, 12] }
[random]
members = `+strconv.Itoa(n)+`
`)
	ms, _, err := s.Draw("law-0000")
	if err != nil {
		t.Fatal(err)
	}
	cdfs := map[string]func(float64) float64{
		"finetune.s":        func(x float64) float64 { return math.Log(x/0.5) / math.Log(8) },
		"finetune.beta_min": func(x float64) float64 { return (x - 0.1) / 0.8 },
	}
	for key, cdf := range cdfs {
		xs := make([]float64, n)
		for i, m := range ms {
			xs[i], _ = strconv.ParseFloat(value(m, key), 64)
		}
		sort.Float64s(xs)
		D := 0.0
		for i, x := range xs {
			F := cdf(x)
			D = max(D, math.Abs(F-float64(i)/n), math.Abs(F-float64(i+1)/n))
		}
		if crit := 1.63 / math.Sqrt(n); D > crit {
			t.Errorf("%s: Kolmogorov–Smirnov D = %.4f > %.4f", key, D, crit)
		}
	}
	count := map[string]int{}
	for _, m := range ms {
		count[value(m, "finetune.refresh")]++
	}
	for _, r := range []string{"10", "11", "12"} {
		if c := count[r]; math.Abs(float64(c)-n/3.0) > 4*math.Sqrt(n*2/9.0) {
			t.Errorf("refresh %s drawn %d times of %d", r, c, n)
		}
	}
	if len(count) != 3 {
		t.Errorf("refresh drawn as %v", count)
	}
}

func TestDrawFiniteGrid(t *testing.T) {
	s := mustParse(t, gridSpec) // objective × s × seed: 4 points
	ms, dr, err := s.Expand("g-0000", Random)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 12 || dr.Points != 4 || dr.Budget != "every point" {
		t.Fatalf("%d members, %+v: want the whole grid", len(ms), dr)
	}
	grid, _ := s.Members("g-0000")
	key := func(m Member) string { return strings.Join(m.Vary, " ") }
	var a, b []string
	for i := range ms {
		a, b = append(a, key(ms[i])), append(b, key(grid[i]))
	}
	slices.Sort(a)
	slices.Sort(b)
	if !slices.Equal(a, b) {
		t.Errorf("drawn without a budget:\n%v\nwant the grid's members\n%v", a, b)
	}
	two := mustParse(t, gridSpec+"\n[random]\nmembers = 2\n")
	ms, _, _ = two.Expand("g-0000", Random)
	if len(ms) != 6 || strings.Join(ms[0].Vary[:2], " ") == strings.Join(ms[3].Vary[:2], " ") {
		t.Errorf("2 points: %d members, points %v and %v: want 2 distinct points × 3 seeds", len(ms), ms[0].Vary, ms[3].Vary)
	}
	// A budget of steps: 300 steps × 3 seeds a point.
	budget := mustParse(t, strings.Replace(drawnSpec, "members = 5", "steps = 4000", 1))
	ms, dr, err = budget.Expand("d-0000", Random)
	if err != nil || len(ms) != 12 || dr.Points != 4 || dr.Budget != "steps 4000" {
		t.Errorf("steps = 4000: %d members, %+v, %v; want 4 points (900 steps each)", len(ms), dr, err)
	}
	// A grid is unchanged by Expand, and asha over a grid spec too.
	for _, how := range []string{Grid, SuccessiveHalving, PopulationBased} {
		ms, dr, err := s.Expand("g-0000", how)
		if err != nil || dr != nil || !slices.EqualFunc(ms, grid, func(a, b Member) bool { return slices.Equal(a.Sets, b.Sets) }) {
			t.Errorf("%s over a grid spec: %v, %+v", how, err, dr)
		}
	}
	// asha over a drawn spec draws.
	if ms, dr, err := mustParse(t, drawnSpec).Expand("d-0000", SuccessiveHalving); err != nil || dr == nil || len(ms) != 15 {
		t.Errorf("asha over distributions: %d members, %+v, %v", len(ms), dr, err)
	}
}

func TestDrawBadSpecs(t *testing.T) {
	for _, c := range []struct{ axes, random, want string }{
		{`"finetune.s" = { normal = [1, 2] }`, "", `drawn.toml: [axes] "finetune.s": normal: unknown distribution; want one of uniform = [lo, hi], log_uniform = [lo, hi] or choice = [values…]`},
		{`"finetune.s" = { uniform = [2, 1] }`, "", `drawn.toml: [axes] "finetune.s": uniform: bounds [2, 1]: want lo < hi`},
		{`"finetune.s" = { log_uniform = [0, 1] }`, "", `drawn.toml: [axes] "finetune.s": log_uniform: bounds [0, 1]: want lo > 0 (a logarithm)`},
		{`"finetune.s" = { uniform = [1, 2, 3] }`, "", `drawn.toml: [axes] "finetune.s": uniform: want two bounds [lo, hi], got 3 values`},
		{`"finetune.s" = { uniform = ["a", 2] }`, "", `drawn.toml: [axes] "finetune.s": uniform: bound a is not a number`},
		{`"finetune.s" = { uniform = [1, 2], choice = [1] }`, "", `drawn.toml: [axes] "finetune.s": want one of uniform = [lo, hi], log_uniform = [lo, hi] or choice = [values…]`},
		{`"finetune.s" = [1.0, 2.0]`, "members = 2\nsteps = 10", `drawn.toml: [random] members and steps: give one budget, not both`},
		{`"finetune.s" = [1.0, 2.0]`, "members = 0", `drawn.toml: [random] members 0: want 1 to 10000 points`},
		{`"finetune.s" = [1.0, 2.0]`, "budget = 3", `drawn.toml: [random] budget: unknown key (it has members, steps and seed)`},
	} {
		text := "[base]\n\"finetune.steps\" = 300\n[axes]\n" + c.axes + "\n"
		if c.random != "" {
			text += "[random]\n" + c.random + "\n"
		}
		_, err := Parse([]byte(text), "drawn.toml")
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s / %s:\n got %v\nwant %s…", c.axes, c.random, err, c.want)
		}
	}
	for _, c := range []struct{ text, how, want string }{
		{drawnSpec, Grid, `drawn.toml: [axes] "finetune.s": log_uniform(0.5, 4) is drawn, not a grid's list: give --search random (or asha, pbt)`},
		{strings.Replace(drawnSpec, "members = 5", "", 1), Random, `drawn.toml: [random] members: "finetune.s" (log_uniform(0.5, 4)) has no end: give a budget, members = N or steps = N`},
		{strings.Replace(drawnSpec, "members = 5", "steps = 800", 1), Random, `drawn.toml: [random] steps 800: one point costs 900 (finetune.steps 300 × 3 seeds × 1 rows): want at least that`},
		{"[base]\n\"finetune.steps\" = 300\n[axes]\n\"finetune.beta_min\" = { uniform = [0.5, 2] }\n[random]\nmembers = 3\n", Random, `drawn.toml: [axes] "finetune.beta_min": upper bound of uniform(0.5, 2): finetune.beta_min: want a number in [0, 1], got 2`},
		{"[axes]\nseed = [1, 2]\n", Random, `drawn.toml: [axes]: nothing to draw: a drawn sweep needs an axis other than seed`},
	} {
		_, _, err := mustParse(t, c.text).Expand("d-0000", c.how)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %s", c.how, err, c.want)
		}
	}
}

func TestRankMetric(t *testing.T) {
	for in, want := range map[string]string{
		"min-recall":             "min-recall",
		"objectives/hmean":       "hmean",
		"metrics/min_coverage":   "metrics/min_coverage",
		"metrics/min-coverage":   "metrics/min_coverage", // the old name
		"metrics/mean_recall":    "metrics/mean_recall",
		"objectives/mean_recall": "",
		"min_recall":             "",
		"metrics/psi":            "",
	} {
		got, err := RankMetric(in)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("RankMetric(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

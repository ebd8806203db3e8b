package search

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"selmix/core/experiment"
	"selmix/core/loop"
	"selmix/core/metric"
)

// PopulationBased is the search that trains a population and, every
// interval, has its worst members continue from its best ones with
// perturbed settings (Jaderberg et al., 2017).
const PopulationBased = "pbt"

// PBTSpec is a spec's [pbt] table; nil fields take their defaults.
type PBTSpec struct {
	// Interval is the steps between two exploits (default: a quarter of
	// finetune.steps, rounded up to a multiple of every member's refresh).
	Interval *int `toml:"interval"`
	// Quantile is the share of the population that is replaced at each
	// exploit, and the share it copies from (default 0.25).
	Quantile *float64 `toml:"quantile"`
	// Explore is how a copied member's settings change: perturb (numbers
	// times 0.8 or 1.2, a named choice redrawn from the spec's values
	// with probability 1/4; the default), resample (every key redrawn
	// from the values the spec gives it) or forecast (Candidates
	// perturbations, the one whose Δψ the copied run's linear model
	// forecasts highest from its checkpoint).
	Explore *string `toml:"explore"`
	// Candidates is how many perturbations explore = forecast ranks
	// (default 8).
	Candidates *int `toml:"candidates"`
	// Keys are the finetune keys explored (default: those the spec's
	// [axes] and [[rows]] vary that a run may change live and that keep ψ
	// the same function).
	Keys *[]string `toml:"keys"`
	// Metric is the objective whose validation ψ ranks the members
	// (default: the one they optimize, which must then be the same for
	// all).
	Metric *string `toml:"metric"`
	// Seed seeds the exploits' and explores' draws (default 1).
	Seed *int64 `toml:"seed"`
}

// Explore choices.
const (
	ExplorePerturb  = "perturb"
	ExploreResample = "resample"
	ExploreForecast = "forecast"
)

// DefaultCandidates is [pbt] candidates' default.
const DefaultCandidates = 8

// DefaultQuantile is [pbt] quantile's default.
const DefaultQuantile = 0.25

func (p *PBTSpec) check() error {
	if p.Interval != nil && *p.Interval < 1 {
		return fmt.Errorf("interval %d: want a number of steps ≥ 1", *p.Interval)
	}
	if p.Quantile != nil && !(*p.Quantile > 0 && *p.Quantile <= 0.5) {
		return fmt.Errorf("quantile %v: want a share in (0, 0.5] (the worst share copies the best share)", *p.Quantile)
	}
	if p.Explore != nil && *p.Explore != ExplorePerturb && *p.Explore != ExploreResample && *p.Explore != ExploreForecast {
		return fmt.Errorf("explore %q: want perturb, resample or forecast", *p.Explore)
	}
	if p.Candidates != nil && (*p.Candidates < 2 || *p.Candidates > 64) {
		return fmt.Errorf("candidates %d: want 2 to 64 perturbations to rank", *p.Candidates)
	}
	if p.Candidates != nil && (p.Explore == nil || *p.Explore != ExploreForecast) {
		return errors.New("candidates: only explore = \"forecast\" ranks candidates")
	}
	if err := checkRankMetric(p.Metric); err != nil {
		return err
	}
	if p.Seed != nil && *p.Seed < 0 {
		return fmt.Errorf("seed %d: want an integer ≥ 0", *p.Seed)
	}
	return nil
}

// PBT is a sweep's population-based plan (sweep.json's "pbt").
type PBT struct {
	Interval int     `json:"interval"`
	Steps    int     `json:"steps"` // every member's finetune.steps
	Quantile float64 `json:"quantile"`
	Explore  string  `json:"explore"`
	// Keys are the explored hyperparameters (finetune keys without the
	// section: "s", "lr"), sorted.
	Keys []string `json:"keys"`
	// Choices are, per key, the values the spec gives it (TOML text), the
	// draws of resample and of a named choice.
	Choices map[string][]string `json:"choices"`
	// Dists are, per key the spec gives a distribution, that
	// distribution: resample draws from it.
	Dists  map[string]Dist `json:"distributions,omitempty"`
	Metric string          `json:"metric,omitempty"`
	Seed   uint64          `json:"seed"`
	// Candidates is how many perturbations explore = forecast ranks.
	Candidates int `json:"candidates,omitempty"`
}

// Gens is the number of generations: intervals up to finetune.steps.
func (p *PBT) Gens() int { return (p.Steps + p.Interval - 1) / p.Interval }

// End is the step generation g ends at: its refresh there ranks it.
func (p *PBT) End(g int) int { return min(p.Steps, (g+1)*p.Interval) }

// StopAt is the step a member's run stops at for generation g (sweep
// member --stop-at): one past the refresh that ranks it (as a rung of
// successive halving), 0 for the last, which runs to the end.
func (p *PBT) StopAt(g int) int {
	if g >= p.Gens()-1 {
		return 0
	}
	return p.End(g) + 1
}

// ExploreText is how a copy explores, as reports say it: "perturb s, lr",
// "forecast s, lr (the best forecast of 8 perturbations)".
func (p *PBT) ExploreText() string {
	t := p.Explore + " " + strings.Join(p.Keys, ", ")
	if p.Explore == ExploreForecast {
		t += fmt.Sprintf(" (the best Δψ the copied run's linear model forecasts of %d perturbations)", p.Candidates)
	}
	return t
}

// MetricName is what ranks the members, as reports say it.
func (p *PBT) MetricName() string {
	if p.Metric == "" {
		return "the optimized objective"
	}
	return p.Metric
}

// PlanPBT is the population-based plan of a sweep of spec's members (the
// first population) as its [pbt] table says, with its defaults where it
// has none. Errors are bad input naming the spec and the key.
func PlanPBT(spec *Spec, members []Member) (*PBT, error) {
	ps := spec.PBT
	if ps == nil {
		ps = &PBTSpec{}
	}
	if err := ps.check(); err != nil {
		return nil, fmt.Errorf("%s: [pbt] %v", spec.File, err)
	}
	if len(members) < 2 {
		return nil, fmt.Errorf("%s: [pbt] a population of %d: want at least 2 members", spec.File, len(members))
	}
	p := &PBT{Quantile: DefaultQuantile, Explore: ExplorePerturb, Seed: 1, Choices: map[string][]string{}}
	if ps.Quantile != nil {
		p.Quantile = *ps.Quantile
	}
	if ps.Explore != nil {
		p.Explore = *ps.Explore
	}
	if p.Explore == ExploreForecast {
		p.Candidates = DefaultCandidates
		if ps.Candidates != nil {
			p.Candidates = *ps.Candidates
		}
	}
	if ps.Metric != nil {
		p.Metric, _ = RankMetric(*ps.Metric) // checked
	}
	if ps.Seed != nil {
		p.Seed = uint64(*ps.Seed)
	}
	steps := map[int]bool{}
	objs := map[metric.Objective]bool{}
	lcm := 1
	for i, m := range members {
		c, err := experiment.Load(spec.BaseConfig, m.Sets)
		if err != nil {
			return nil, fmt.Errorf("%s: member %d: %v", spec.File, i, err)
		}
		steps[c.Finetune.Steps] = true
		objs[c.Finetune.Objective] = true
		lcm = lcm / gcd(lcm, c.Finetune.Refresh) * c.Finetune.Refresh
		p.Steps = c.Finetune.Steps
	}
	if len(steps) > 1 {
		return nil, fmt.Errorf("%s: finetune.steps: the members run %s steps; population-based training gives every member one budget: set finetune.steps in [base]", spec.File, JoinInts(slices.Sorted(maps.Keys(steps)), ", "))
	}
	if p.Metric == "" && len(objs) > 1 {
		var names []string
		for o := range objs {
			names = append(names, string(o))
		}
		slices.Sort(names)
		return nil, mixedObjectives(spec.File, "pbt", names)
	}
	p.Interval = (p.Steps/4 + lcm - 1) / lcm * lcm
	if ps.Interval != nil {
		p.Interval = *ps.Interval
		if p.Interval%lcm != 0 {
			return nil, fmt.Errorf("%s: [pbt] interval %d: the members refresh every %d steps (finetune.refresh): want a multiple of it, so a refresh ranks each generation", spec.File, p.Interval, lcm)
		}
	}
	if p.Interval >= p.Steps {
		return nil, fmt.Errorf("%s: [pbt] interval %d: want fewer than finetune.steps (%d)", spec.File, p.Interval, p.Steps)
	}
	// The values the spec gives each finetune key.
	given := map[string][]string{}
	add := func(key, v string) {
		if k, ok := strings.CutPrefix(key, "finetune."); ok && !slices.Contains(given[k], v) {
			given[k] = append(given[k], v)
		}
	}
	dists := map[string]Dist{}
	for _, a := range spec.Axes {
		for _, v := range a.Values {
			add(a.Key, v)
		}
		if k, ok := strings.CutPrefix(a.Key, "finetune."); ok && a.Dist != nil {
			dists[k] = *a.Dist
			if _, ok := given[k]; !ok {
				given[k] = nil // a key the spec varies, by a distribution
			}
		}
	}
	for _, r := range spec.Rows {
		for _, s := range r {
			add(s.Key, s.Value)
		}
	}
	if ps.Keys != nil {
		for _, k := range *ps.Keys {
			k = strings.TrimPrefix(k, "finetune.")
			if err := explorable(k); err != nil {
				return nil, fmt.Errorf("%s: [pbt] keys: %v", spec.File, err)
			}
			p.Keys = append(p.Keys, k)
		}
	} else {
		for k := range given {
			if explorable(k) == nil {
				p.Keys = append(p.Keys, k)
			}
		}
	}
	slices.Sort(p.Keys)
	p.Keys = slices.Compact(p.Keys)
	if len(p.Keys) == 0 {
		return nil, fmt.Errorf("%s: [pbt] keys: nothing to explore: the spec varies no finetune key a run may change live (name them, e.g. keys = [\"s\", \"lr\"])", spec.File)
	}
	for _, k := range p.Keys {
		if d, ok := dists[k]; ok {
			if p.Dists == nil {
				p.Dists = map[string]Dist{}
			}
			p.Dists[k] = d
			continue
		}
		if p.Explore == ExploreResample && len(given[k]) < 2 {
			return nil, fmt.Errorf("%s: [pbt] explore = resample: the spec gives finetune.%s %d value(s): want at least 2 to draw from", spec.File, k, len(given[k]))
		}
		if len(given[k]) > 0 {
			p.Choices[k] = given[k]
		}
	}
	return p, nil
}

// explorable refuses a key PBT cannot explore: one a run cannot change
// live, one that makes ψ another function (the population is ranked by
// one ψ), and the refresh interval (a refresh ranks each generation).
func explorable(k string) error {
	switch {
	case !slices.Contains(loop.HyperKeys(), k):
		return fmt.Errorf("finetune.%s: not a hyperparameter a run may change live (%s)", k, strings.Join(loop.HyperKeys(), ", "))
	case loop.ChangesPsi(k):
		return fmt.Errorf("finetune.%s: changes what ψ is, so members could not be ranked by it", k)
	case k == "refresh":
		return fmt.Errorf("finetune.refresh: a refresh ranks each generation; keep the interval fixed")
	}
	return nil
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// Exploit is one decision of a generation's end: member Member continues
// from member From's checkpoint there, with Sets (finetune.key=value) on
// top of From's settings.
type Exploit struct {
	Member, From int
	Sets         []string
	// Ranked are, under explore = forecast, the candidates ranked and
	// their forecasts (Sets is the first with the highest); nil otherwise.
	Ranked []Candidate
}

// Candidate is one setting explore = forecast ranked: its sets and the
// change of ψ the copied run's linear model forecast for it over the
// interval its checkpoint opens (NaN where it forecast none).
type Candidate struct {
	Sets     []string
	Forecast float64
}

// Score forecasts the change of ψ under each of cands (each a list of
// finetune.key=value on top of member from's settings) from member from's
// checkpoint at the generation's end, for member's copy of it; NaN where
// there is no forecast.
type Score func(member, from int, cands [][]string) ([]float64, error)

// Decide takes generation g's exploits from the members' ψ there (NaN:
// none, ranked last) and the settings in force in each (Hyper.Get text by
// key): each of the worst ⌊quantile·n⌋ (at least one) copies one of as
// many best, drawn, and explores from its settings. It is a function of
// its arguments, the plan and (explore = forecast) score alone, so a
// resumed sweep decides what the uninterrupted one did. score is called
// only under explore = forecast; its error is Decide's.
func (p *PBT) Decide(g int, psi []float64, cur []map[string]string, score Score) ([]Exploit, error) {
	n := len(psi)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		x, y := psi[a], psi[b]
		switch {
		case math.IsNaN(x) && math.IsNaN(y):
			return 0
		case math.IsNaN(x):
			return 1
		case math.IsNaN(y):
			return -1
		}
		return cmp.Compare(y, x)
	})
	k := max(1, int(math.Floor(p.Quantile*float64(n))))
	top, bottom := order[:k], order[n-k:]
	var out []Exploit
	for _, b := range bottom {
		rng := rand.New(rand.NewPCG(p.Seed, uint64(g)<<32|uint64(b)))
		from := top[rng.IntN(k)]
		e := Exploit{Member: b, From: from, Sets: p.explore(rng, cur[from])}
		if p.Explore == ExploreForecast {
			var err error
			if e.Sets, e.Ranked, err = p.forecast(rng, b, from, e.Sets, cur[from], score); err != nil {
				return nil, fmt.Errorf("generation %d, member %d copying member %d: %w", g, b, from, err)
			}
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Exploit) int { return cmp.Compare(a.Member, b.Member) })
	return out, nil
}

// forecast is explore = forecast: first (the perturbation perturb would
// take) and Candidates-1 more, distinct, drawn as perturb draws but with
// each number scaled by a factor log-uniform in [1/2, 2] (widely),
// ranked by score; the one forecast highest is taken, the first drawn among
// equals, and first where none has a forecast.
func (p *PBT) forecast(rng *rand.Rand, member, from int, first []string, vals map[string]string, score Score) ([]string, []Candidate, error) {
	cands := [][]string{first}
	for try := 0; len(cands) < p.Candidates && try < 8*p.Candidates; try++ {
		c := p.exploreBy(rng, vals, widely)
		if !slices.ContainsFunc(cands, func(x []string) bool { return slices.Equal(x, c) }) {
			cands = append(cands, c)
		}
	}
	if score == nil {
		return nil, nil, errors.New("explore = forecast: nothing to forecast with")
	}
	f, err := score(member, from, cands)
	if err != nil {
		return nil, nil, err
	}
	if len(f) != len(cands) {
		return nil, nil, fmt.Errorf("%d forecasts for %d candidates", len(f), len(cands))
	}
	ranked := make([]Candidate, len(cands))
	best := 0
	for i, c := range cands {
		ranked[i] = Candidate{Sets: c, Forecast: f[i]}
		if f[i] > f[best] || math.IsNaN(f[best]) && !math.IsNaN(f[i]) {
			best = i
		}
	}
	return cands[best], ranked, nil
}

// resampleShare is perturb's chance of redrawing a named choice.
const resampleShare = 0.25

// explore is the settings a copy of a member whose settings are vals
// takes: one finetune.key=value per explored key.
func (p *PBT) explore(rng *rand.Rand, vals map[string]string) []string {
	return p.exploreBy(rng, vals, func(rng *rand.Rand) (float64, int) {
		if rng.IntN(2) == 1 {
			return 1.2, 12
		}
		return 0.8, 12
	})
}

// widely is a factor log-uniform in [1/2, 2], and the significant figures
// its product keeps.
func widely(rng *rand.Rand) (float64, int) { return math.Exp((2*rng.Float64() - 1) * math.Ln2), 4 }

// exploreBy is explore with the factor a number is scaled by drawn by
// factor (with the significant figures the product keeps).
func (p *PBT) exploreBy(rng *rand.Rand, vals map[string]string, factor func(*rand.Rand) (float64, int)) []string {
	var sets []string
	for _, k := range p.Keys {
		old := vals[k]
		v := old
		choices := p.Choices[k]
		x, numErr := strconv.ParseFloat(old, 64)
		switch {
		case p.Explore == ExploreResample && p.Dists[k].Kind != "":
			v = unquote(p.Dists[k].draw(rng))
		case p.Explore == ExploreResample && len(choices) > 0:
			v = unquote(choices[rng.IntN(len(choices))])
		case numErr == nil:
			f, digits := factor(rng)
			if isInt(k) {
				nx := int(math.Round(x * f))
				if nx == int(x) && f > 1 {
					nx++ // a small integer moves by one at least
				} else if nx == int(x) {
					nx--
				}
				v = strconv.Itoa(max(1, nx))
			} else {
				v = strconv.FormatFloat(x*f, 'g', digits, 64) // 0.72, not 0.7200000000000001
			}
		case len(choices) > 0 && rng.Float64() < resampleShare:
			v = unquote(choices[rng.IntN(len(choices))])
		}
		h := loop.DefaultHyper()
		if h.Set(k, v) != nil {
			v = old // out of range (β_min past 1): keep the copied value
		}
		sets = append(sets, "finetune."+k+"="+v)
	}
	return sets
}

// isInt reports whether hyperparameter k takes an integer.
func isInt(k string) bool {
	h := loop.DefaultHyper()
	return h.Set(k, "1.5") != nil && h.Set(k, "2") == nil
}

// unquote is TOML text's string, or the text itself.
func unquote(s string) string {
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	return s
}

// Check holds the rules sweep.json's plan obeys.
func (p *PBT) Check(members int) error {
	switch {
	case members < 2:
		return errors.New("pbt: a population of fewer than 2")
	case p.Interval < 1 || p.Steps <= p.Interval:
		return fmt.Errorf("pbt: interval %d for %d steps", p.Interval, p.Steps)
	case !(p.Quantile > 0 && p.Quantile <= 0.5):
		return fmt.Errorf("pbt: quantile %v", p.Quantile)
	case p.Explore != ExplorePerturb && p.Explore != ExploreResample && p.Explore != ExploreForecast:
		return fmt.Errorf("pbt: explore %q", p.Explore)
	case p.Explore == ExploreForecast && (p.Candidates < 2 || p.Candidates > 64):
		return fmt.Errorf("pbt: %d candidates", p.Candidates)
	case len(p.Keys) == 0:
		return errors.New("pbt: no keys")
	case !rankMetricOK(p.Metric):
		return fmt.Errorf("pbt: metric %q", p.Metric)
	}
	for _, k := range p.Keys {
		if err := explorable(k); err != nil {
			return fmt.Errorf("pbt: %v", err)
		}
	}
	return nil
}

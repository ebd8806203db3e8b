package search

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"selmix/core/experiment"
)

// Random is the search that draws its members: each axis's value from
// its distribution (a list of values is a choice), as many points as the
// spec's budget says, each run on every seed.
const Random = "random"

// Distribution kinds an axis may take instead of a list of values.
const (
	DistUniform    = "uniform"     // uniform between two bounds
	DistLogUniform = "log_uniform" // uniform in the logarithm between two positive bounds
	DistChoice     = "choice"      // one of a list, equally likely (a plain list is one too)
)

// Dist is an axis's distribution: Lo and Hi bound a uniform or
// log-uniform draw; Int when both bounds are integers, and the draws are
// then integers too (rounded, for log_uniform).
type Dist struct {
	Kind string  `json:"kind"`
	Lo   float64 `json:"lo"`
	Hi   float64 `json:"hi"`
	Int  bool    `json:"int,omitempty"`
}

// String is the distribution as the spec writes it: log_uniform(0.5, 4).
func (d Dist) String() string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	return fmt.Sprintf("%s(%s, %s)", d.Kind, f(d.Lo), f(d.Hi))
}

// draw is one value of the distribution as TOML text: an integer, or a
// float with 4 significant figures (s = 1.732, not 1.7320508075688772).
func (d Dist) draw(rng *rand.Rand) string {
	u := rng.Float64()
	var x float64
	switch d.Kind {
	case DistLogUniform:
		x = math.Exp(math.Log(d.Lo) + u*(math.Log(d.Hi)-math.Log(d.Lo)))
	default:
		if d.Int {
			return strconv.FormatInt(int64(d.Lo)+rng.Int64N(int64(d.Hi-d.Lo)+1), 10)
		}
		x = d.Lo + u*(d.Hi-d.Lo)
	}
	if d.Int {
		return strconv.FormatInt(int64(math.Round(min(max(x, d.Lo), d.Hi))), 10)
	}
	x, _ = strconv.ParseFloat(strconv.FormatFloat(x, 'g', 4, 64), 64)
	t, _ := render(min(max(x, d.Lo), d.Hi)) // a float renders
	return t
}

// parseDist reads an axis given as a table: exactly one of uniform = [lo,
// hi], log_uniform = [lo, hi] (lo > 0) or choice = [values…]. A choice
// is returned as its values, a distribution as a Dist.
func parseDist(t map[string]any) (*Dist, []any, error) {
	const want = "want one of uniform = [lo, hi], log_uniform = [lo, hi] or choice = [values…]"
	if len(t) != 1 {
		return nil, nil, errors.New(want)
	}
	for kind, v := range t {
		arr, ok := v.([]any)
		if !ok || len(arr) == 0 {
			return nil, nil, fmt.Errorf("%s: want an array; %s", kind, want)
		}
		switch kind {
		case DistChoice:
			return nil, arr, nil
		case DistUniform, DistLogUniform:
		default:
			return nil, nil, fmt.Errorf("%s: unknown distribution; %s", kind, want)
		}
		if len(arr) != 2 {
			return nil, nil, fmt.Errorf("%s: want two bounds [lo, hi], got %d values", kind, len(arr))
		}
		d := &Dist{Kind: kind}
		ints := 0
		for i, b := range arr {
			var x float64
			switch b := b.(type) {
			case int64:
				x, ints = float64(b), ints+1
			case float64:
				x = b
			default:
				return nil, nil, fmt.Errorf("%s: bound %v is not a number", kind, b)
			}
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, nil, fmt.Errorf("%s: bound %v: want a finite number", kind, x)
			}
			if i == 0 {
				d.Lo = x
			} else {
				d.Hi = x
			}
		}
		d.Int = ints == 2
		switch {
		case !(d.Lo < d.Hi):
			return nil, nil, fmt.Errorf("%s: bounds [%v, %v]: want lo < hi", kind, d.Lo, d.Hi)
		case kind == DistLogUniform && d.Lo <= 0:
			return nil, nil, fmt.Errorf("%s: bounds [%v, %v]: want lo > 0 (a logarithm)", kind, d.Lo, d.Hi)
		}
		return d, nil, nil
	}
	return nil, nil, errors.New(want)
}

// RandomSpec is a spec's [random] table: how many points a drawn sweep
// has and how they are drawn.
type RandomSpec struct {
	// Members is the number of points drawn; each runs on every seed.
	Members *int `toml:"members"`
	// Steps is a budget of fine-tuning steps instead: as many points as
	// it pays for to the end (finetune.steps × seeds × rows each).
	Steps *int `toml:"steps"`
	// Seed seeds the draws (default 1).
	Seed *int64 `toml:"seed"`
}

func (r *RandomSpec) check() error {
	switch {
	case r.Members != nil && r.Steps != nil:
		return errors.New("members and steps: give one budget, not both")
	case r.Members != nil && (*r.Members < 1 || *r.Members > MaxMembers):
		return fmt.Errorf("members %d: want 1 to %d points", *r.Members, MaxMembers)
	case r.Steps != nil && *r.Steps < 1:
		return fmt.Errorf("steps %d: want a budget of steps ≥ 1", *r.Steps)
	}
	return nil
}

// Drawn is how a sweep's members were drawn (sweep.json's "random").
type Drawn struct {
	Seed   uint64 `json:"seed"`
	Points int    `json:"points"` // points drawn; each on every Paired value
	// Budget is the [random] budget as the spec gave it ("members 12",
	// "steps 24000") or "every point" where a finite grid was drawn whole.
	Budget string `json:"budget"`
	// Paired is the axis each point runs on every value of ("seed"), ""
	// if none.
	Paired string `json:"paired,omitempty"`
	// Dists are the distributions by key, as the spec writes them.
	Dists map[string]string `json:"distributions,omitempty"`
}

// PairedKey is the axis a drawn point is run on every value of: seeds
// are paired, not drawn.
const PairedKey = "seed"

// gridOfDists is the error of a grid over a spec with a distribution.
func (s *Spec) gridOfDists() error {
	i := slices.IndexFunc(s.Axes, func(a Axis) bool { return a.Dist != nil })
	return fmt.Errorf("%s: [axes] %q: %s is drawn, not a grid's list: give --search random (or asha, pbt)", s.File, s.Axes[i].Key, s.Axes[i].Dist)
}

// HasDists reports whether an axis of the spec is a distribution (a
// uniform or log-uniform draw), which only a drawn sweep can expand.
func (s *Spec) HasDists() bool {
	return slices.ContainsFunc(s.Axes, func(a Axis) bool { return a.Dist != nil })
}

// Draws reports whether a sweep of the spec searched by how draws its
// members rather than taking the grid: --search random, or a search over
// a spec with distributions or a [random] table.
func (s *Spec) Draws(how string) bool {
	return how == Random || how != Grid && how != "" && (s.HasDists() || s.Random != nil)
}

// Expand is the members of a sweep with id searched by how: the grid
// (Members), or drawn (Draw) where how draws them; with the plan of the
// draw, nil for a grid.
func (s *Spec) Expand(id, how string) ([]Member, *Drawn, error) {
	if s.Draws(how) {
		return s.Draw(id)
	}
	ms, err := s.Members(id)
	return ms, nil, err
}

// Draw is the members of a drawn sweep with id: [random]'s budget of
// points, each axis's value from its distribution (a list is a choice),
// each point run on every seed (the seed axis is paired, not drawn) and
// with every [[rows]] row, the points in the order drawn. Where every
// drawn axis is a list, points are drawn without replacement (the whole
// grid in a random order when no budget is given); with a distribution a
// budget is required.
func (s *Spec) Draw(id string) ([]Member, *Drawn, error) {
	rs := s.Random
	if rs == nil {
		rs = &RandomSpec{}
	}
	if err := rs.check(); err != nil {
		return nil, nil, fmt.Errorf("%s: [random] %v", s.File, err)
	}
	dr := &Drawn{Seed: 1, Dists: map[string]string{}}
	if rs.Seed != nil {
		dr.Seed = uint64(*rs.Seed)
	}
	var drawn []Axis
	pairs := []string{""}
	for _, a := range s.Axes {
		if a.Key == PairedKey && a.Dist == nil {
			dr.Paired, pairs = a.Key, a.Values
			continue
		}
		drawn = append(drawn, a)
		if a.Dist != nil {
			dr.Dists[a.Key] = a.Dist.String()
		}
	}
	if len(drawn) == 0 {
		return nil, nil, fmt.Errorf("%s: [axes]: nothing to draw: a drawn sweep needs an axis other than %s", s.File, PairedKey)
	}
	// Every value between the bounds is valid where both are (the
	// configuration's ranges are intervals): a bound out of range is named
	// here, not as the member that happened to draw near it.
	for _, a := range drawn {
		if a.Dist == nil {
			continue
		}
		for i, x := range []float64{a.Dist.Lo, a.Dist.Hi} {
			t, _ := render(x)
			if a.Dist.Int {
				t = strconv.FormatInt(int64(x), 10)
			}
			if _, err := experiment.Load(s.BaseConfig, append(s.baseSets(), a.Key+"="+t)); err != nil {
				return nil, nil, fmt.Errorf("%s: [axes] %q: %s bound of %s: %v", s.File, a.Key, [2]string{"lower", "upper"}[i], a.Dist, err)
			}
		}
	}
	rows := max(1, len(s.Rows))
	finite, grid := !s.HasDists(), 1
	for _, a := range drawn {
		if grid = grid * max(1, len(a.Values)); grid > MaxMembers {
			finite = false // too many to enumerate: draw with replacement
		}
	}
	switch {
	case rs.Members != nil:
		dr.Points, dr.Budget = *rs.Members, fmt.Sprintf("members %d", *rs.Members)
	case rs.Steps != nil:
		c, err := experiment.Load(s.BaseConfig, s.baseSets())
		if err != nil {
			return nil, nil, fmt.Errorf("%s: [base]: %v", s.File, err)
		}
		if slices.Contains(s.Columns(), "finetune.steps") {
			return nil, nil, fmt.Errorf("%s: [random] steps: the members run different finetune.steps: a budget of steps needs one (set it in [base])", s.File)
		}
		per := c.Finetune.Steps * len(pairs) * rows
		dr.Points, dr.Budget = *rs.Steps/per, fmt.Sprintf("steps %d", *rs.Steps)
		if dr.Points < 1 {
			return nil, nil, fmt.Errorf("%s: [random] steps %d: one point costs %d (finetune.steps %d × %d seeds × %d rows): want at least that", s.File, *rs.Steps, per, c.Finetune.Steps, len(pairs), rows)
		}
	case finite:
		dr.Points, dr.Budget = grid, "every point"
	default:
		i := slices.IndexFunc(drawn, func(a Axis) bool { return a.Dist != nil })
		key := "the grid"
		if i >= 0 {
			key = fmt.Sprintf("%q (%s)", drawn[i].Key, drawn[i].Dist)
		}
		return nil, nil, fmt.Errorf("%s: [random] members: %s has no end: give a budget, members = N or steps = N", s.File, key)
	}
	if finite {
		dr.Points = min(dr.Points, grid)
	}
	if n := dr.Points * len(pairs) * rows; n > MaxMembers {
		return nil, nil, fmt.Errorf("%s: [random]: %d members; at most %d per sweep", s.File, n, MaxMembers)
	}
	rng := rand.New(rand.NewPCG(dr.Seed, 0x73656c6d6978)) // "selmix"
	points := make([][]string, dr.Points)
	if finite {
		perm := rng.Perm(grid)
		for p := range points {
			points[p] = gridPoint(drawn, perm[p])
		}
	} else {
		for p := range points {
			points[p] = make([]string, len(drawn))
			for i, a := range drawn {
				if a.Dist != nil {
					points[p][i] = a.Dist.draw(rng)
				} else {
					points[p][i] = a.Values[rng.IntN(len(a.Values))]
				}
			}
		}
	}
	// Members in axis order: each point's drawn values, then each pair.
	var combos [][]Setting
	for _, pt := range points {
		for _, pv := range pairs {
			var c []Setting
			j := 0
			for _, a := range s.Axes {
				if a.Key == dr.Paired && a.Dist == nil {
					c = append(c, Setting{a.Key, pv})
					continue
				}
				c = append(c, Setting{a.Key, pt[j]})
				j++
			}
			combos = append(combos, c)
		}
	}
	ms, err := s.build(id, combos)
	if len(dr.Dists) == 0 {
		dr.Dists = nil
	}
	return ms, dr, err
}

// gridPoint is the n-th combination of the axes' values, the last axis
// fastest.
func gridPoint(axes []Axis, n int) []string {
	out := make([]string, len(axes))
	for i := len(axes) - 1; i >= 0; i-- {
		k := len(axes[i].Values)
		out[i] = axes[i].Values[n%k]
		n /= k
	}
	return out
}

// baseSets are [base]'s settings as --set arguments.
func (s *Spec) baseSets() []string {
	var out []string
	for _, st := range s.Base {
		out = append(out, st.Arg())
	}
	return out
}

// DistText is a drawn axis's distributions as reports say them:
// `finetune.s ~ log_uniform(0.5, 4)`, in key order.
func (d *Drawn) DistText() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(d.Dists)) {
		parts = append(parts, k+" ~ "+d.Dists[k])
	}
	return strings.Join(parts, ", ")
}

// Describe says how n members were drawn: "12 points drawn (members 12,
// seed 1) × seeds 1, 2, 3 = 36 members; finetune.s ~ log_uniform(0.5, 4)".
func (d *Drawn) Describe(n int) string {
	t := fmt.Sprintf("%d points drawn at random (%s, seed %d)", d.Points, d.Budget, d.Seed)
	if d.Paired != "" {
		t += ", each on every " + d.Paired
	}
	t += fmt.Sprintf(": %d members", n)
	if len(d.Dists) > 0 {
		t += "; " + d.DistText()
	}
	return t
}

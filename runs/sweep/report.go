package sweep

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat"

	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/core/search"
	"selmix/internal/safetext"
	"selmix/runs"
	"selmix/runs/record"
)

// SeedKey is the axis a report averages over.
const SeedKey = "seed"

// ResultColumn is one test metric of a finished run's final summary, after
// fine-tuning (the last step), before it (the pre-trained model) and at
// the best step (the model the run keeps; NaN where it kept none): the
// columns of a sweep's report (viz.SweepReport) and of the paper suite's
// tables (bench.PaperReport).
type ResultColumn struct {
	Name                string // as a sweep's report heads it
	Short               string // as the paper suite's wider tables head it
	After, Before, Best func(s *loop.Summary) float64
}

func reportColumn(name, short string, f func(metric.Report) float64) ResultColumn {
	return ResultColumn{name, short,
		func(s *loop.Summary) float64 { return f(s.TestAfter) },
		func(s *loop.Summary) float64 { return f(s.TestBefore) },
		func(s *loop.Summary) float64 {
			if s.Best == nil {
				return math.NaN()
			}
			return f(s.Best.Test)
		}}
}

// ObjectiveColumn is ψ of objective o.
func ObjectiveColumn(o metric.Objective) ResultColumn {
	name := record.ObjectiveSeries(o).Label
	return ResultColumn{name, name,
		func(s *loop.Summary) float64 { return o.In(s.TestObjAfter) },
		func(s *loop.Summary) float64 { return o.In(s.TestObjBefore) },
		func(s *loop.Summary) float64 {
			if s.Best == nil {
				return math.NaN()
			}
			return o.In(s.Best.TestObj)
		}}
}

// OptimizedColumn is ψ of the objective the run optimized (at best: the
// one the kept model was judged on).
var OptimizedColumn = ResultColumn{"ψ (optimized)", "ψ optimized",
	func(s *loop.Summary) float64 { return s.Objective.In(s.TestObjAfter) },
	func(s *loop.Summary) float64 { return s.Objective.In(s.TestObjBefore) },
	func(s *loop.Summary) float64 {
		if s.Best == nil {
			return math.NaN()
		}
		return s.Best.Objective.In(s.Best.TestObj)
	}}

// MetricColumns are the metrics of metric.Report the reports show.
var MetricColumns = []ResultColumn{
	reportColumn("mean recall", "mean rec", func(r metric.Report) float64 { return r.MeanRecall }),
	reportColumn("min recall", "min rec", func(r metric.Report) float64 { return r.MinRecall }),
	reportColumn("H-mean", "H-mean", func(r metric.Report) float64 { return r.HMean }),
	reportColumn("G-mean", "G-mean", func(r metric.Report) float64 { return r.GMean }),
	reportColumn("min coverage", "min cov", func(r metric.Report) float64 { return r.MinCoverage }),
}

// ReportColumns are a sweep report's: the optimized ψ, then MetricColumns.
var ReportColumns = append([]ResultColumn{OptimizedColumn}, MetricColumns...)

// Results is what a sweep's report shows: its members grouped by every
// column but seed, with the final summaries of the finished ones.
type Results struct {
	ID      string
	Members int      // how many the sweep has
	Keys    []string // the grouping columns, by their short names
	Columns []string // the grouping columns, by their whole keys (as Keys)
	Seeded  bool     // the sweep has a seed column: members pair by seed
	Groups  []*Group
	Notes   []string // what was left out, and why
	// Schedule is a successive-halving sweep's schedule; nil for a grid
	// (or where it could not be read: a note says why).
	Schedule *ScheduleReport
	// Population is a population-based sweep's generations and exploits;
	// nil otherwise (or where it could not be read: a note says why).
	Population *PopulationReport
	// Traces are a search's members' validation ψ over steps, for its
	// figures; nil for a grid.
	Traces []Trace
}

// Group is the members that differ only by seed.
type Group struct {
	Key       []string // display values of the grouping columns
	Label     string   // the group in figure legends: "objective=min-recall policy=greedy"
	Members   int
	Summaries []*loop.Summary // of its finished members, in member order
	// Seeds are the seeds of those members, as Summaries ("" where the
	// sweep has no seed column).
	Seeds []string
	// First is its first finished member with a refresh in its log, and
	// History that log, for the figures; nil if none.
	First   *runs.Run
	History *record.History
	// Runs are its finished members and Histories their logs, in member
	// order, for the spread over seeds.
	Runs      []*runs.Run
	Histories []*record.History
}

// Finished is how many members have finished.
func (r *Results) Finished() int {
	n := 0
	for _, g := range r.Groups {
		n += len(g.Summaries)
	}
	return n
}

// Results reads the final summaries of s's finished members, grouped by
// every column but seed. Notes say which members could not be read.
func (s *Sweep) Results() (*Results, error) {
	byName, err := s.Runs()
	if err != nil {
		return nil, err
	}
	res := &Results{ID: s.ID, Members: len(s.Members)}
	var keyCols []int
	names := ShortNames(s.Columns)
	seedCol := slices.Index(s.Columns, SeedKey)
	res.Seeded = seedCol >= 0
	for c, k := range s.Columns {
		if k != SeedKey {
			keyCols = append(keyCols, c)
			res.Keys = append(res.Keys, names[c])
			res.Columns = append(res.Columns, k)
		}
	}
	find := func(key []string) *Group {
		for _, g := range res.Groups {
			if slices.Equal(g.Key, key) {
				return g
			}
		}
		g := &Group{Key: key, Label: label(s, keyCols, key)}
		res.Groups = append(res.Groups, g)
		return g
	}
	for i, m := range s.Members {
		key := make([]string, len(keyCols))
		for j, c := range keyCols {
			key[j] = search.Display(m.Vary[c])
		}
		g := find(key)
		g.Members++
		run, err := s.pick(i, byName)
		if err != nil {
			res.Notes = append(res.Notes, err.Error())
			continue
		}
		if run == nil {
			continue
		}
		h, err := record.Load(run)
		if err != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("member %d: %v", i, err))
			continue
		}
		if h.Final == nil {
			continue
		}
		g.Summaries = append(g.Summaries, h.Final)
		seed := ""
		if seedCol >= 0 {
			seed = search.Display(m.Vary[seedCol])
		}
		g.Seeds = append(g.Seeds, seed)
		g.Runs, g.Histories = append(g.Runs, run), append(g.Histories, h)
		if g.First == nil && len(h.Refreshes) > 0 {
			g.First, g.History = run, h
		}
	}
	if res.Schedule, err = s.ScheduleReport(); err != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("the schedule: %v", err))
	}
	if res.Population, err = s.PopulationReport(); err != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("the population: %v", err))
	}
	traces, notes, err := s.Traces()
	if err != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("the members' ψ over steps: %v", err))
	}
	res.Traces, res.Notes = traces, append(res.Notes, notes...)
	return res, nil
}

// RankedBy names what Ranked orders by, for a report to say.
var RankedBy = OptimizedColumn.Name + " on test at the best step (the model each run keeps)"

// Ranked orders the groups by the mean over their finished members of
// the optimized ψ on test at the best step, highest first; groups with no
// such value (none finished, or none kept a model) go last, in their order.
func (r *Results) Ranked() []*Group {
	key := func(g *Group) float64 {
		xs := make([]float64, len(g.Summaries))
		for k, s := range g.Summaries {
			xs[k] = OptimizedColumn.Best(s)
		}
		if xs = Known(xs); len(xs) == 0 {
			return math.Inf(-1)
		}
		return stat.Mean(xs, nil)
	}
	out := slices.Clone(r.Groups)
	slices.SortStableFunc(out, func(a, b *Group) int { return cmp.Compare(key(b), key(a)) })
	return out
}

// label names a group in figure legends: "objective=min-recall policy=greedy".
func label(s *Sweep, keyCols []int, key []string) string {
	var parts []string
	names := ShortNames(s.Columns)
	for j, c := range keyCols {
		if key[j] != "" {
			parts = append(parts, names[c]+"="+key[j])
		}
	}
	return strings.Join(parts, " ")
}

// Reference is what a seed-paired difference is taken against (`sweep
// report --vs KEY=VALUE`): for each group, the group with its values but
// Value in grouping column Col.
type Reference struct {
	Col   int    // index in Results.Keys
	Key   string // the column as the report heads it
	Value string // its value, as the report shows it
}

// String is the reference as a report names it: "policy=resample".
func (ref Reference) String() string { return ref.Key + "=" + ref.Value }

// ParseReference reads a reference "KEY=VALUE": KEY a grouping column, by
// its whole key or as the report heads it (finetune.policy or policy),
// VALUE a value of it some member has (TOML text or as shown: resample or
// "resample"). The sweep must have a seed column to pair over.
func (r *Results) ParseReference(spec string) (Reference, error) {
	k, v, ok := strings.Cut(spec, "=")
	k, v = strings.TrimSpace(k), strings.TrimSpace(v)
	if !ok || k == "" || v == "" {
		return Reference{}, errors.New("want KEY=VALUE, such as finetune.policy=resample")
	}
	if !r.Seeded {
		return Reference{}, errors.New("the sweep has no seed axis: there is nothing to pair members over")
	}
	if k == SeedKey {
		return Reference{}, errors.New("seed is what members are paired over; name another column")
	}
	col := slices.IndexFunc(r.Keys, func(name string) bool { return name == k })
	if col < 0 {
		col = slices.Index(r.Columns, k)
	}
	if col < 0 {
		if len(r.Columns) == 0 {
			return Reference{}, fmt.Errorf("no column %s: seed is the only column the sweep varies", safetext.Middle(k, 40))
		}
		return Reference{}, fmt.Errorf("no column %s: the sweep varies %s", safetext.Middle(k, 40), strings.Join(append(slices.Clone(r.Columns), SeedKey), ", "))
	}
	v = search.Display(v)
	var have []string
	for _, g := range r.Groups {
		if g.Key[col] == v {
			return Reference{Col: col, Key: r.Keys[col], Value: v}, nil
		}
		if !slices.Contains(have, g.Key[col]) {
			have = append(have, g.Key[col])
		}
	}
	if len(have) > 8 {
		have = append(have[:8], "…")
	}
	return Reference{}, fmt.Errorf("no member has %s=%s (its values: %s)", r.Keys[col], safetext.Middle(v, 40), safetext.Middle(strings.Join(have, ", "), 120))
}

// RefGroup is g's reference group: the one with g's values but ref's in
// its column; nil if the sweep has none.
func (r *Results) RefGroup(g *Group, ref Reference) *Group {
	want := slices.Clone(g.Key)
	want[ref.Col] = ref.Value
	for _, h := range r.Groups {
		if slices.Equal(h.Key, want) {
			return h
		}
	}
	return nil
}

// Paired is the differences value(g's member) − value(ref's member of the
// same seed) over the seeds both have a finished member of with a known
// value, in g's member order. A seed that appears twice in a group pairs
// by its first member.
func Paired(g, ref *Group, value func(*loop.Summary) float64) []float64 {
	var out []float64
	for k, seed := range g.Seeds {
		if slices.Index(g.Seeds, seed) != k {
			continue
		}
		j := slices.Index(ref.Seeds, seed)
		if j < 0 {
			continue
		}
		d := value(g.Summaries[k]) - value(ref.Summaries[j])
		if !math.IsNaN(d) {
			out = append(out, d)
		}
	}
	return out
}

// MeanStdSigned is MeanStd with the mean's sign always written: a
// difference, "+0.0123 ± 0.0040".
func MeanStdSigned(xs []float64) string {
	switch len(xs) {
	case 0:
		return "–"
	case 1:
		return fmt.Sprintf("%+.4f", xs[0])
	}
	m, sd := stat.MeanStdDev(xs, nil)
	return fmt.Sprintf("%+.4f ± %.4f", m, sd)
}

// Known drops the NaN of xs: the members that have no value (at best:
// those that kept no model).
func Known(xs []float64) []float64 {
	return slices.DeleteFunc(slices.Clone(xs), math.IsNaN)
}

// MeanStd formats xs as "mean ± sample std", the mean alone for one
// value, and "–" for none.
func MeanStd(xs []float64) string {
	switch len(xs) {
	case 0:
		return "–"
	case 1:
		return fmt.Sprintf("%.4f", xs[0])
	}
	m, sd := stat.MeanStdDev(xs, nil) // sample (n−1) standard deviation
	return fmt.Sprintf("%.4f ± %.4f", m, sd)
}

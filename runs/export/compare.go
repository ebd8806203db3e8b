package export

import (
	"io"
	"math"
	"strconv"

	"selmix/internal/safetext"
	"selmix/runs"
	"selmix/runs/record"
)

// Comparison is runs side by side, as runs compare prints it: the config
// keys whose values differ, and for every metric the final, best
// (largest), smallest and largest value over the refreshes on validation
// and on test the value before fine-tuning, after it (the last step) and
// at the best step (the model the run keeps). Each list holds one entry
// per run, in the order given.
type Comparison struct {
	Runs   []ComparedRun `json:"runs"`
	Config []ConfigDiff  `json:"config"`
	Val    []ValSeries   `json:"val"`
	Test   []TestSeries  `json:"test"`
}

// ComparedRun names a run of a comparison; BestStep is the step of the
// model it keeps (null if it kept none).
type ComparedRun struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Tags     []string `json:"tags"`
	BestStep *int     `json:"best_step"`
}

// ConfigDiff is a config key whose value differs between the runs;
// Values are its text, null where a run does not set it.
type ConfigDiff struct {
	Key    string    `json:"key"`
	Values []*string `json:"values"`
}

// ValSeries is one metric over each run's refreshes on validation.
type ValSeries struct {
	Metric string     `json:"metric"`
	Runs   []ValStats `json:"runs"`
}

// ValStats summarises a series: NaN values count for Final only, and a
// run with no refresh (or only NaN) has NaN throughout.
type ValStats struct {
	Final record.Num `json:"final"`
	Best  record.Num `json:"best"` // the largest: every metric is better larger
	Min   record.Num `json:"min"`
	Max   record.Num `json:"max"`
}

// TestSeries is one metric on test before and after fine-tuning and at
// the best step; a run that has not finished has null.
type TestSeries struct {
	Metric string         `json:"metric"`
	Runs   []*BeforeAfter `json:"runs"`
}

// BeforeAfter is a test metric before fine-tuning, after it (the last
// step) and at the best step (the kept model; NaN if the run kept none).
type BeforeAfter struct {
	Before record.Num `json:"before"`
	After  record.Num `json:"after"`
	Best   record.Num `json:"best"`
}

// CompareMetrics are the metrics a comparison summarises: ψ, every
// objective's ψ and every reported metric (ψ is validation only).
func CompareMetrics() []string {
	var out []string
	for _, s := range record.AllSeries() {
		if s.Key == Psi || s.Objective != "" || s.Scalar != nil {
			out = append(out, s.Key)
		}
	}
	return out
}

// Compare puts rs side by side.
func Compare(rs []Recorded) Comparison {
	var c Comparison
	for _, r := range rs {
		cr := ComparedRun{ID: r.Meta.ID, Name: r.Meta.Name, Tags: append([]string{}, r.Meta.Tags...)}
		if f := r.Hist.Final; f != nil && f.Best != nil {
			step := f.Best.Step
			cr.BestStep = &step
		}
		c.Runs = append(c.Runs, cr)
	}
	cfgs := make([]runs.Config, len(rs))
	for i, r := range rs {
		cfgs[i] = r.Config
	}
	keys := runs.Keys(cfgs...)
	c.Config = []ConfigDiff{}
	for _, k := range keys {
		d := ConfigDiff{Key: k}
		differ := false
		for i, r := range rs {
			var v *string
			if _, ok := r.Config[k]; ok {
				s := r.Config.Text(k)
				v = &s
			}
			d.Values = append(d.Values, v)
			if i > 0 && !equalPtr(v, d.Values[0]) {
				differ = true
			}
		}
		if differ {
			c.Config = append(c.Config, d)
		}
	}
	// Every metric's values over each run's refreshes, and on test.
	val := make([]map[string][]float64, len(rs))
	test := make([]map[string][3]float64, len(rs))
	for i, r := range rs {
		val[i] = map[string][]float64{}
		for j := range r.Hist.Refreshes {
			for p := range Refresh(&r.Hist.Refreshes[j]) {
				if p.Class < 0 {
					val[i][p.Metric] = append(val[i][p.Metric], p.Value)
				}
			}
		}
		if r.Hist.Final != nil {
			test[i] = map[string][3]float64{}
			for p := range Final(r.Hist) {
				if p.Class < 0 {
					v := test[i][p.Metric]
					v[2] = math.NaN()
					if p.Step == 0 {
						v[0] = p.Value
					} else {
						v[1] = p.Value
					}
					test[i][p.Metric] = v
				}
			}
			for p := range AtBest(r.Hist) {
				if v, ok := test[i][p.Metric]; ok && p.Class < 0 {
					v[2] = p.Value
					test[i][p.Metric] = v
				}
			}
		}
	}
	for _, m := range CompareMetrics() {
		vs := ValSeries{Metric: m}
		for i := range rs {
			vs.Runs = append(vs.Runs, summarize(val[i][m]))
		}
		c.Val = append(c.Val, vs)
		if m == Psi {
			continue
		}
		ts := TestSeries{Metric: m}
		for i := range rs {
			var ba *BeforeAfter
			if v, ok := test[i][m]; ok {
				ba = &BeforeAfter{record.Num(v[0]), record.Num(v[1]), record.Num(v[2])}
			}
			ts.Runs = append(ts.Runs, ba)
		}
		c.Test = append(c.Test, ts)
	}
	return c
}

func equalPtr(a, b *string) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

func summarize(v []float64) ValStats {
	nan := record.Num(math.NaN())
	s := ValStats{Final: nan, Best: nan, Min: nan, Max: nan}
	if len(v) > 0 {
		s.Final = record.Num(v[len(v)-1])
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range v {
		if !math.IsNaN(x) {
			lo, hi = min(lo, x), max(hi, x)
		}
	}
	if lo <= hi {
		s.Best, s.Min, s.Max = record.Num(hi), record.Num(lo), record.Num(hi)
	}
	return s
}

// WriteCSV writes c as one CSV table with a column per run: the header
// "section,metric,stat,<run id>…", then a row per config key that
// differs (section config, no stat), per validation metric and stat
// (final, best, min, max) and per test metric and stat (before, after,
// best: at the best step, the model the run keeps), then the row
// "run,best_step" with each run's best step.
// A cell is empty where a run has no value; numbers are written as the
// shortest text that reads back to the same float64, or NaN, inf, -inf.
func (c Comparison) WriteCSV(w io.Writer) error {
	cw := safetext.NewCSV(w)
	head := []string{"section", "metric", "stat"}
	for _, r := range c.Runs {
		head = append(head, r.ID)
	}
	cw.Write(head)
	row := func(section, metric, stat string, cells []string) {
		cw.Write(append([]string{section, metric, stat}, cells...))
	}
	for _, d := range c.Config {
		cells := make([]string, len(d.Values))
		for i, v := range d.Values {
			if v != nil {
				cells[i] = *v
			}
		}
		row("config", d.Key, "", cells)
	}
	for _, s := range c.Val {
		for _, st := range []struct {
			name string
			get  func(ValStats) record.Num
		}{
			{"final", func(v ValStats) record.Num { return v.Final }},
			{"best", func(v ValStats) record.Num { return v.Best }},
			{"min", func(v ValStats) record.Num { return v.Min }},
			{"max", func(v ValStats) record.Num { return v.Max }},
		} {
			cells := make([]string, len(s.Runs))
			for i, v := range s.Runs {
				cells[i] = FormatFloat(float64(st.get(v)))
			}
			row("val", s.Metric, st.name, cells)
		}
	}
	for _, s := range c.Test {
		for j, stat := range []string{"before", "after", "best"} {
			cells := make([]string, len(s.Runs))
			for i, v := range s.Runs {
				if v != nil {
					cells[i] = FormatFloat(float64([]record.Num{v.Before, v.After, v.Best}[j]))
				}
			}
			row("test", s.Metric, stat, cells)
		}
	}
	cells := make([]string, len(c.Runs))
	for i, r := range c.Runs {
		if r.BestStep != nil {
			cells[i] = strconv.Itoa(*r.BestStep)
		}
	}
	row("run", "best_step", "", cells)
	cw.Flush()
	return cw.Error()
}

// formatFloat is a number as pandas and polars read it (table.FormatFloat).
func FormatFloat(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

package export

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/runs"
	"selmix/runs/runstest"
)

var vizRuns = filepath.Join("..", "..", "viz", "testdata", "run")

func loadRuns(t *testing.T) []Recorded {
	t.Helper()
	all, err := runs.List(vizRuns)
	if err != nil || len(all) != 2 {
		t.Fatalf("%v %v", all, err)
	}
	var rs []Recorded
	for i := range all {
		r, err := Load(&all[i])
		if err != nil {
			t.Fatal(err)
		}
		if r.Meta.ID != all[i].Meta.ID || r.Hist == nil || len(r.Hist.Refreshes) == 0 || r.Config.Text("finetune.policy") == "" {
			t.Fatalf("Load(%s): meta %s, %v refreshes, policy %q", all[i].Meta.ID, r.Meta.ID, r.Hist, r.Config.Text("finetune.policy"))
		}
		if r.Dir != all[i].Dir || r.Status != all[i].EffectiveStatus() || !strings.Contains(r.ConfigText, "[finetune]") {
			t.Fatalf("Load(%s): dir %q status %q, config.toml %.40q", all[i].Meta.ID, r.Dir, r.Status, r.ConfigText)
		}
		rs = append(rs, r)
	}
	return rs
}

// Compare lists the config keys that differ with each run's value, and
// for every metric the final, best, min and max over the refreshes and
// the test values before and after, from the runs' own numbers.
func TestCompare(t *testing.T) {
	rs := loadRuns(t)
	c := Compare(rs)
	var keys []string
	for _, d := range c.Config {
		keys = append(keys, d.Key)
		if *d.Values[0] == *d.Values[1] {
			t.Errorf("%s listed but the same: %q", d.Key, *d.Values[0])
		}
	}
	if strings.Join(keys, " ") != "finetune.policy name" || *c.Config[0].Values[0] != "selmix" || *c.Config[0].Values[1] != "uniform" {
		t.Errorf("config diff %q", keys)
	}
	for _, s := range c.Val {
		if s.Metric != "metrics/min_recall" {
			continue
		}
		for i, r := range rs {
			var vals []float64
			for _, rf := range r.Hist.Refreshes {
				vals = append(vals, rf.Stats.Report.MinRecall)
			}
			lo, hi := vals[0], vals[0]
			for _, v := range vals {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
			got := s.Runs[i]
			if float64(got.Final) != vals[len(vals)-1] || float64(got.Best) != hi || float64(got.Min) != lo || float64(got.Max) != hi {
				t.Errorf("run %d min recall %+v; values %v", i, got, vals)
			}
		}
	}
	for _, s := range c.Test {
		if s.Metric != "objectives/min-recall" {
			continue
		}
		for i, r := range rs {
			if got := s.Runs[i]; float64(got.Before) != r.Hist.Final.TestObjBefore[1] || float64(got.After) != r.Hist.Final.TestObjAfter[1] {
				t.Errorf("run %d test min-recall %+v", i, got)
			}
		}
	}
	if len(c.Val) != 1+len(metric.Objectives())+len(metric.Scalars()) || len(c.Test) != len(c.Val)-1 {
		t.Errorf("%d validation and %d test metrics", len(c.Val), len(c.Test))
	}

	// JSON: NaN (an objective the runs did not record) is a string.
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"final":"NaN"`) {
		t.Errorf("JSON has no NaN string: the gmean@cov objective was not recorded")
	}

	// CSV: one column per run; a row per config key, metric and stat.
	var buf bytes.Buffer
	if err := c.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(recs[0], ",") != "section,metric,stat,"+rs[0].Meta.ID+","+rs[1].Meta.ID {
		t.Errorf("header %q", recs[0])
	}
	if want := 1 + len(c.Config) + 4*len(c.Val) + 3*len(c.Test) + 1; len(recs) != want {
		t.Errorf("%d rows, want %d", len(recs), want)
	}
	for _, rec := range recs {
		if rec[0] == "test" && rec[1] == "metrics/mean_recall" && rec[2] == "after" {
			for i, r := range rs {
				if rec[3+i] != FormatFloat(r.Hist.Final.TestAfter.MeanRecall) {
					t.Errorf("test mean recall after, run %d: %q", i, rec[3+i])
				}
			}
		}
	}
}

func TestFormatFloat(t *testing.T) {
	for v, want := range map[float64]string{0.1: "0.1", 1e-300: "1e-300", math.Inf(1): "inf", math.Inf(-1): "-inf", 3: "3"} {
		if got := FormatFloat(v); got != want {
			t.Errorf("FormatFloat(%v) = %q, want %q", v, got, want)
		}
	}
	if FormatFloat(math.NaN()) != "NaN" {
		t.Error("NaN")
	}
}

func TestClassTag(t *testing.T) {
	names := []string{"T-shirt/top", "", "Ankle boot"}
	for _, tt := range []struct {
		c, K  int
		names []string
		want  string
	}{
		{0, 3, names, "0_T-shirt_top"}, {1, 3, names, "1"}, {2, 3, names, "2_Ankle_boot"},
		{7, 100, nil, "07"}, {42, 1000, nil, "042"}, {0, 1, nil, "0"},
	} {
		if got := ClassTag(tt.c, tt.K, tt.names); got != tt.want {
			t.Errorf("ClassTag(%d, %d) = %q, want %q", tt.c, tt.K, got, tt.want)
		}
	}
}

// Load names config.toml in the run's folder when it does not parse.
func TestLoadBadConfig(t *testing.T) {
	all, err := runs.List(vizRuns)
	if err != nil || len(all) == 0 {
		t.Fatalf("%v %v", all, err)
	}
	dst := filepath.Join(t.TempDir(), all[0].Meta.ID)
	runstest.Copy(t, all[0].Dir, dst, func(name string, b []byte) []byte {
		if name == "config.toml" {
			return []byte("[finetune\n")
		}
		return b
	})
	r, err := runs.Open(filepath.Dir(dst), all[0].Meta.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Load(r); err == nil || !strings.Contains(err.Error(), filepath.Join(dst, "config.toml")+": ") {
		t.Errorf("Load with a broken config.toml: %v, want an error naming %s", err, filepath.Join(dst, "config.toml"))
	}
}

// Test at best: a run that kept a model has its test numbers at the best
// step beside the last step's, in the structure, the JSON and the CSV;
// one that kept none has NaN (JSON) and empty cells (CSV).
func TestCompareAtBest(t *testing.T) {
	rs := loadRuns(t)
	f := rs[0].Hist.Final
	rep := f.TestBefore
	rep.MeanRecall, rep.MinCoverage = 0.4321, 0.0123
	objs := make([]float64, len(f.TestObjAfter))
	for i := range objs {
		objs[i] = 0.01 * float64(i+1)
	}
	step := rs[0].Hist.Refreshes[1].Step
	f.Best = &loop.Best{Step: step, Objective: metric.MinRecall, Psi: 0.5, Val: f.ValAfter, Test: rep, TestObj: objs}
	c := Compare(rs)
	if c.Runs[0].BestStep == nil || *c.Runs[0].BestStep != step || c.Runs[1].BestStep != nil {
		t.Errorf("best steps %v, %v; want %d and none", c.Runs[0].BestStep, c.Runs[1].BestStep, step)
	}
	got := map[string]*BeforeAfter{}
	for _, s := range c.Test {
		got[s.Metric] = s.Runs[0]
		if b := s.Runs[1]; b == nil || !math.IsNaN(float64(b.Best)) {
			t.Errorf("%s: run without a kept model has best %v, want NaN", s.Metric, b)
		}
	}
	for m, want := range map[string]float64{"metrics/mean_recall": 0.4321, "metrics/min_coverage": 0.0123, "objectives/mean-recall": 0.01, "objectives/min-recall": 0.02} {
		if b := got[m]; b == nil || float64(b.Best) != want || float64(b.After) == want {
			t.Errorf("%s: %+v, want best %v apart from after", m, b, want)
		}
	}
	js, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"best_step":`+strconv.Itoa(step)) || !strings.Contains(string(js), `"best":0.4321`) {
		t.Errorf("JSON lacks the best step or the test at best: %.300s", js)
	}
	var buf bytes.Buffer
	if err := c.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var sawBest, sawStep bool
	for _, rec := range recs {
		switch {
		case rec[0] == "test" && rec[1] == "metrics/mean_recall" && rec[2] == "best":
			sawBest = rec[3] == "0.4321" && rec[4] == "NaN"
		case rec[0] == "run" && rec[1] == "best_step":
			sawStep = rec[3] == strconv.Itoa(step) && rec[4] == ""
		}
	}
	if !sawBest || !sawStep {
		t.Errorf("CSV: test at best row %v, best_step row %v:\n%s", sawBest, sawStep, buf.String())
	}
}

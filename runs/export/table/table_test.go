package table

import (
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/runs"
	"selmix/runs/export"
	"selmix/runs/record"
)

var vizRuns = filepath.Join("..", "..", "..", "viz", "testdata", "run")

func loadRuns(t *testing.T) []export.Recorded {
	t.Helper()
	all, err := runs.List(vizRuns)
	if err != nil || len(all) != 2 {
		t.Fatalf("%v %v", all, err)
	}
	var rs []export.Recorded
	for i := range all {
		r, err := export.Load(&all[i])
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	rs[0].Meta.Tags = []string{"a", "b"}
	keepBest(rs[0].Hist)
	return rs
}

// keepBest gives a history that kept no model (the fixtures predate it)
// one at its second refresh, with test numbers of its own, so the test
// at best rows can be told from the others.
func keepBest(h *record.History) {
	f := h.Final
	rep := f.TestBefore
	rep.Recall = append([]float64(nil), rep.Recall...)
	rep.Coverage = append([]float64(nil), rep.Coverage...)
	rep.MeanRecall, rep.MinCoverage, rep.Recall[0], rep.Coverage[1] = 0.4321, 0.0123, 0.5678, 0.0987
	objs := make([]float64, len(f.TestObjAfter))
	for i := range objs {
		objs[i] = 0.01 * float64(i+1)
	}
	f.Best = &loop.Best{Step: h.Refreshes[1].Step, Objective: metric.MinRecall, Psi: 0.5, Val: f.ValAfter, Test: rep, TestObj: objs}
}

// key names a row of the long table.
type key struct {
	run, split, metric string
	step, class        int
}

// want is every number of the runs, from their histories: each refresh's
// payload as the run format writes it (every number in it but k and the
// worst class), its per-class vectors, and the test set's before and
// after, and at the best step (split test_best) where a run kept a model.
func want(t *testing.T, rs []export.Recorded) map[key]float64 {
	t.Helper()
	out := map[key]float64{}
	for _, r := range rs {
		for i := range r.Hist.Refreshes {
			rf := &r.Hist.Refreshes[i]
			add := func(m string, c int, v float64) { out[key{r.Meta.ID, "val", m, rf.Step, c}] = v }
			b, _ := json.Marshal(rf.Data())
			var d map[string]any
			json.Unmarshal(b, &d)
			num := func(v any) float64 {
				if f, ok := v.(float64); ok {
					return f
				}
				f, _ := strconv.ParseFloat(v.(string), 64) // "NaN", "+Inf", "-Inf"
				return f
			}
			add("psi", -1, num(d["psi"]))
			add("s", -1, num(d["s"]))
			for _, k := range []string{"loss", "predicted", "realised"} {
				if v, ok := d[k]; ok {
					add(map[string]string{"loss": "loss", "predicted": "delta_psi/predicted", "realised": "delta_psi/realised"}[k], -1, num(v))
				}
			}
			for o, v := range d["objectives"].(map[string]any) {
				add("objectives/"+o, -1, num(v))
			}
			for k, v := range d["report"].(map[string]any) {
				if k != "k" && k != "worst" {
					add("metrics/"+k, -1, num(v))
				}
			}
			for c := range rf.Stats.Report.Recall {
				add("recall", c, rf.Stats.Report.Recall[c])
				add("coverage", c, rf.Stats.Report.Coverage[c])
			}
			for c, v := range rf.Stats.Lambda {
				add("lambda", c, v)
			}
		}
		f := r.Hist.Final
		sides := []struct {
			split string
			step  int
			rep   metric.Report
			objs  []float64
		}{{"test", 0, f.TestBefore, f.TestObjBefore}, {"test", f.Steps, f.TestAfter, f.TestObjAfter}}
		if b := f.Best; b != nil {
			sides = append(sides, struct {
				split string
				step  int
				rep   metric.Report
				objs  []float64
			}{"test_best", b.Step, b.Test, b.TestObj})
		}
		for _, side := range sides {
			add := func(m string, c int, v float64) { out[key{r.Meta.ID, side.split, m, side.step, c}] = v }
			for i, o := range metric.Objectives() {
				add("objectives/"+string(o), -1, side.objs[i])
			}
			rp := side.rep
			for k, v := range map[string]float64{
				"mean_recall": rp.MeanRecall, "min_recall": rp.MinRecall, "hmean": rp.HMean, "gmean": rp.GMean,
				"min_coverage": rp.MinCoverage, "accuracy": rp.Accuracy, "head_recall": rp.HeadRecall, "tail_recall": rp.TailRecall,
				"min_ht_recall": rp.MinHTRecall, "head_coverage": rp.HeadCoverage, "tail_coverage": rp.TailCoverage, "min_ht_coverage": rp.MinHTCoverage,
			} {
				add("metrics/"+k, -1, v)
			}
			for c := range rp.Recall {
				add("recall", c, rp.Recall[c])
				add("coverage", c, rp.Coverage[c])
			}
		}
	}
	return out
}

func same(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

// check compares the rows read back with want: the same set, the same
// values, no row twice.
func check(t *testing.T, got map[key]float64, n int, w map[key]float64) {
	t.Helper()
	if n != len(got) {
		t.Errorf("%d rows, %d distinct", n, len(got))
	}
	if len(got) != len(w) {
		t.Errorf("%d rows, want %d", len(got), len(w))
	}
	bad := 0
	for k, v := range w {
		if g, ok := got[k]; !ok || !same(g, v) {
			if bad++; bad < 10 {
				t.Errorf("%+v = %v (present %v), want %v", k, g, ok, v)
			}
		}
	}
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// The CSV long table holds every number of every run, exactly; the runs
// table one row per run with its metadata, tags and config.
func TestCSV(t *testing.T) {
	rs := loadRuns(t)
	path := filepath.Join(t.TempDir(), "runs.csv")
	runsPath, err := WriteCSV(path, nil, rs)
	if err != nil {
		t.Fatal(err)
	}
	if runsPath != filepath.Join(filepath.Dir(path), "runs.runs.csv") {
		t.Errorf("runs table at %s", runsPath)
	}
	recs := readCSV(t, path)
	if strings.Join(recs[0], ",") != "run,step,split,metric,class,class_name,value" {
		t.Fatalf("header %q", recs[0])
	}
	got := map[key]float64{}
	for _, rec := range recs[1:] {
		step, err1 := strconv.Atoi(rec[1])
		class := -1
		var err2 error
		if rec[4] != "" {
			class, err2 = strconv.Atoi(rec[4])
		}
		v, err3 := strconv.ParseFloat(rec[6], 64)
		if names := export.Classes(rsByID(rs, rec[0]).Hist); class >= 0 && class < len(names) && rec[5] != names[class] {
			t.Errorf("row %q: class_name %q, want %q", rec, rec[5], names[class])
		}
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("row %q: %v %v %v", rec, err1, err2, err3)
		}
		got[key{rec[0], rec[2], rec[3], step, class}] = v
	}
	check(t, got, len(recs)-1, want(t, rs))

	runRecs := readCSV(t, runsPath)
	if len(runRecs) != 3 {
		t.Fatalf("runs table has %d lines, want a header and 2 runs", len(runRecs))
	}
	col := map[string]int{}
	for i, c := range runRecs[0] {
		col[c] = i
	}
	for i, r := range rs {
		row := runRecs[i+1]
		if row[col["run"]] != r.Meta.ID || row[col["name"]] != r.Meta.Name || row[col["status"]] != "finished" ||
			row[col["tags"]] != strings.Join(r.Meta.Tags, " ") || row[col["best"]] != export.FormatFloat(r.Meta.Best) || row[col["parent"]] != "" {
			t.Errorf("run %d: %q", i, row)
		}
		for k, v := range r.Config {
			if got := row[col["config."+k]]; got != cell(v) {
				t.Errorf("run %d: config.%s = %q, want %q", i, k, got, cell(v))
			}
		}
	}
	if p := runRecs[1][col["config.finetune.policy"]] + "," + runRecs[2][col["config.finetune.policy"]]; p != "selmix,uniform" {
		t.Errorf("policies %s", p)
	}
}

// The Parquet tables hold what the CSV ones do, typed.
func TestParquet(t *testing.T) {
	rs := loadRuns(t)
	path := filepath.Join(t.TempDir(), "out.parquet")
	runsPath, err := WriteParquet(path, nil, rs)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(runsPath) != "out.runs.parquet" {
		t.Errorf("runs table at %s", runsPath)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	type row struct {
		Run       string  `parquet:"run"`
		Step      int64   `parquet:"step"`
		Split     string  `parquet:"split"`
		Metric    string  `parquet:"metric"`
		Class     *int32  `parquet:"class,optional"`
		ClassName *string `parquet:"class_name,optional"`
		Value     float64 `parquet:"value"`
	}
	rows, err := parquet.Read[row](f, fi.Size())
	if err != nil {
		t.Fatal(err)
	}
	got := map[key]float64{}
	for _, r := range rows {
		c := -1
		if r.Class != nil {
			c = int(*r.Class)
		}
		if names := export.Classes(rsByID(rs, r.Run).Hist); c >= 0 && c < len(names) && (r.ClassName == nil || *r.ClassName != names[c]) {
			t.Errorf("row %+v: class_name %v, want %q", r, r.ClassName, names[c])
		}
		got[key{r.Run, r.Split, r.Metric, int(r.Step), c}] = r.Value
	}
	check(t, got, len(rows), want(t, rs))

	rf, err := os.Open(runsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close()
	rfi, _ := rf.Stat()
	pf, err := parquet.OpenFile(rf, rfi.Size())
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]parquet.Field{}
	for _, fl := range pf.Schema().Fields() {
		byName[fl.Name()] = fl
	}
	for name, kind := range map[string]parquet.Kind{"run": parquet.ByteArray, "steps": parquet.Int64, "best": parquet.Double, "config.finetune.s": parquet.Double, "config.finetune.steps": parquet.Int64, "config.finetune.policy": parquet.ByteArray} {
		if fl, ok := byName[name]; !ok || fl.Type().Kind() != kind || !fl.Optional() {
			t.Errorf("column %s: %v (present %v), want optional %v", name, fl, ok, kind)
		}
	}
	r := parquet.NewReader(pf)
	var all []map[string]any
	for {
		m := map[string]any{}
		if err := r.Read(&m); err != nil {
			break
		}
		all = append(all, m)
	}
	if len(all) != 2 {
		t.Fatalf("%d runs read back", len(all))
	}
	for i, m := range all {
		r := rs[i]
		if m["run"] != r.Meta.ID || m["tags"] != strings.Join(r.Meta.Tags, " ") || m["best"] != r.Meta.Best || m["steps"] != int64(r.Meta.Steps) || m["parent"] != nil {
			t.Errorf("run %d: %v", i, m)
		}
		if m["config.finetune.policy"] != r.Config["finetune.policy"] || m["config.finetune.s"] != r.Config["finetune.s"] {
			t.Errorf("run %d: policy %v s %v, want %v %v", i, m["config.finetune.policy"], m["config.finetune.s"], r.Config["finetune.policy"], r.Config["finetune.s"])
		}
	}
}

func TestRunsPath(t *testing.T) {
	for in, want := range map[string]string{
		"runs.csv": "runs.runs.csv", "a/b/out.parquet": "a/b/out.runs.parquet", "t": "t.runs", "d.x/t": "d.x/t.runs", ".csv": ".csv.runs",
	} {
		if got := RunsPath(in); got != want {
			t.Errorf("RunsPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func rsByID(rs []export.Recorded, id string) export.Recorded {
	for _, r := range rs {
		if r.Meta.ID == id {
			return r
		}
	}
	return export.Recorded{Hist: &record.History{}}
}

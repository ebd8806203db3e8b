package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/runs"
	"selmix/runs/export"
	"selmix/runs/record"
	"selmix/runs/runstest"
)

// root holds two finished runs of 200 steps, viz-selmix and viz-uniform,
// that differ in finetune.policy.
var root = filepath.Join("..", "..", "viz", "testdata", "run")

func TestList(t *testing.T) {
	var b bytes.Buffer
	if err := List(&b, root, nil); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID  ") {
		t.Fatalf("List: want a header and 2 rows, got\n%s", b.String())
	}
	for i, want := range [][]string{
		{"20261123-1200-819c", "viz-selmix", "min-recall", "selmix", "finished", "200", "0.5034", "(120)", "0.4813", "-", "2026-11-23", "12:00:57Z", "-"},
		{"20261123-1201-c986", "viz-uniform", "min-recall", "uniform", "finished", "200", "0.4820", "(40)", "0.4350", "-", "2026-11-23", "12:01:08Z", "-"},
	} {
		if got := strings.Fields(lines[i+1]); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("row %d: %q, want %q", i, got, want)
		}
	}
	b.Reset()
	if err := List(&b, root, []string{"paper"}); err != nil {
		t.Fatal(err)
	}
	if want := "no run in " + root + " is tagged paper\n"; b.String() != want {
		t.Errorf("List tagged paper: %q, want %q", b.String(), want)
	}
	b.Reset()
	if err := List(&b, t.TempDir(), nil); err != nil || !strings.HasPrefix(b.String(), "no runs in ") {
		t.Errorf("List of an empty root: %q, %v", b.String(), err)
	}
}

func TestListJSON(t *testing.T) {
	var b bytes.Buffer
	if err := ListJSON(&b, root, []string{"nope"}); err != nil || b.String() != "[]\n" {
		t.Errorf("ListJSON of no run: %q %v, want []", b.String(), err)
	}
	b.Reset()
	if err := ListJSON(&b, root, nil); err != nil {
		t.Fatal(err)
	}
	var got []Record
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "viz-selmix" || got[0].Best == nil || math.Abs(float64(*got[0].Best)-0.5034) > 5e-5 ||
		*got[0].BestStep != 120 || got[0].Tags == nil || got[1].Policy != "uniform" {
		t.Errorf("ListJSON: %+v", got)
	}
}

func openRun(t *testing.T, name string) (*runs.Run, *record.History) {
	t.Helper()
	r, err := runs.Open(root, name)
	if err != nil {
		t.Fatal(err)
	}
	h, err := record.Load(r)
	if err != nil {
		t.Fatal(err)
	}
	return r, h
}

func TestShow(t *testing.T) {
	r, h := openRun(t, "viz-selmix")
	var b bytes.Buffer
	Show(&b, r, h)
	for _, want := range []string{
		"run       20261123-1200-819c\nname      viz-selmix\n",
		"status    finished\nobjective min-recall\npolicy    selmix\nsteps     200\n",
		"best      ψ min-recall 0.5034 at step 120 (validation)\n",
		"events    11 refreshes, 2 controls, 1 starts\n  step     80  set s=30\n  step    140  set lr=0.001\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("Show lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "metric") {
		t.Errorf("Show printed the summary, which is the caller's:\n%s", b.String())
	}

	// Sources: a scheduled control says so; finetune.adapt's changes are
	// counted and summarised apart, not listed as the researcher's.
	h.Controls = append([]loop.Ack{{Control: loop.Control{Op: loop.OpSet, Key: "batch", Value: "64", Source: loop.SourceSchedule}, Step: 20}}, h.Controls...)
	for i, lr := range []string{"0.0029", "0.0021", "0.0015"} {
		h.Controls = append(h.Controls, loop.Ack{Control: loop.Control{Op: loop.OpSet, Key: "lr", Value: lr, Source: loop.SourceAdapt}, Step: 50 * (i + 1)})
	}
	b.Reset()
	Show(&b, r, h)
	want := "events    11 refreshes, 6 controls (3 by finetune.adapt), 1 starts\n" +
		"  step     20  set batch=64 (schedule)\n  step     80  set s=30\n  step    140  set lr=0.001\n" +
		"  adapt        lr: 3 changes from step 50 to 150, last 0.0015\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("Show lacks %q:\n%s", want, b.String())
	}
}

func TestShowJSON(t *testing.T) {
	r, h := openRun(t, "viz-uniform")
	var b bytes.Buffer
	if err := ShowJSON(&b, r, h); err != nil {
		t.Fatal(err)
	}
	var got struct {
		ID          string         `json:"id"`
		Config      map[string]any `json:"config"`
		Checkpoints []int          `json:"checkpoints"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	ft, _ := got.Config["finetune"].(map[string]any)
	if got.ID != "20261123-1201-c986" || ft["policy"] != "uniform" || got.Checkpoints == nil {
		t.Errorf("ShowJSON: id %q, finetune %v, checkpoints %v", got.ID, ft, got.Checkpoints)
	}
}

func TestBests(t *testing.T) {
	var b bytes.Buffer
	Bests(&b, []record.Best{{Objective: "min-recall", Psi: 0.5, Step: 10, From: 0, To: 20}, {Objective: "hmean", Psi: 0.7, Step: 30, From: 20, To: 40}})
	want := "best      ψ hmean 0.7000 at step 30 (validation, optimized from step 20 to 40)\n" +
		"          ψ min-recall 0.5000 at step 10 (validation, optimized from step 0 to 20)\n"
	if b.String() != want {
		t.Errorf("Bests:\n%q\nwant\n%q", b.String(), want)
	}
}

func TestCompare(t *testing.T) {
	var rs []export.Recorded
	for _, n := range []string{"viz-selmix", "viz-uniform"} {
		r, _ := openRun(t, n)
		e, err := export.Load(r)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, e)
	}
	// The fixtures predate the kept model: the first keeps one at step 20
	// whose test mean recall is 0.4321.
	f := rs[0].Hist.Final
	rep := f.TestBefore
	rep.MeanRecall = 0.4321
	f.Best = &loop.Best{Step: 20, Test: rep, TestObj: f.TestObjBefore}
	var b bytes.Buffer
	if err := Compare(&b, rs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"run                   20261123-1200-819c  20261123-1201-c986\n",
		"config (keys that differ)\nfinetune.policy                   selmix             uniform\n\nvalidation, last refresh\n",
		"min_recall                        0.4780              0.4540\n",
		"test, after fine-tuning (the last step)\nmean_recall                       0.7925              0.8295\n",
		"best step                             20                   -\n",
		"test, at the best step (the model the run keeps)\nmean_recall                       0.4321                   -\n",
		"\n- : not recorded (a run that has not finished has no test values; one that kept no model, none at best)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("Compare lacks %q:\n%s", want, out)
		}
	}
	// Every section has a row per metric of the catalogue, under its Key
	// (the name the exports and the comparison view use), in its order.
	var keys []string
	for _, m := range metric.Scalars() {
		keys = append(keys, regexp.QuoteMeta(m.Key)+` +[-0-9.]+ +[-0-9.]+\n`)
	}
	if n := len(regexp.MustCompile(`\n`+strings.Join(keys, "")).FindAllString(out, -1)); n != 5 {
		t.Errorf("%d sections list the %d metrics of metric.Scalars by key, want 5:\n%s", n, len(keys), out)
	}
	// The classes at coverage ≥ α/K on test after fine-tuning, counted
	// here from the runs' own coverages against 0.95/K.
	var cells []string
	for _, r := range rs {
		n := 0
		for _, c := range r.Hist.Final.TestAfter.Coverage {
			if c >= 0.95/float64(r.Hist.Final.TestAfter.K)-1e-9 {
				n++
			}
		}
		cells = append(cells, fmt.Sprintf("%d/%d", n, r.Hist.Final.TestAfter.K))
	}
	if want := regexp.MustCompile(`test, after fine-tuning \(the last step\)\n(?:.*\n)*?coverage ≥ α/K met +` + cells[0] + ` +` + cells[1] + `\n`); !want.MatchString(out) {
		t.Errorf("Compare lacks the row of constraints met on test (%v):\n%s", cells, out)
	}
	if strings.Contains(out, "method") {
		t.Errorf("runs of the paper's method have a method row:\n%s", out)
	}
	b.Reset()
	rs[1].Meta.Method = "samples gain"
	if err := Compare(&b, rs); err != nil || !strings.Contains(b.String(), "method                             paper        samples gain\n") {
		t.Errorf("Compare of a run with the samples gain lacks its method row: %v\n%s", err, b.String())
	}
	rs[1].Meta.Method = ""
	b.Reset()
	if err := Compare(&b, rs[:1]); err != nil || !strings.Contains(b.String(), "config (keys that differ)\n(none)\n") {
		t.Errorf("Compare of one run: %v, no (none) under the config heading:\n%s", err, b.String())
	}
}

func TestSummarySteps(t *testing.T) {
	s := &loop.Summary{Steps: 3698, Seconds: 5, TestObjBefore: make([]float64, 10), TestObjAfter: make([]float64, 10)}
	for _, c := range []struct {
		from int
		want string
	}{
		{0, "* optimized objective; 3698 fine-tuning steps in 5.0s\n"},
		{2408, "* optimized objective; 1290 fine-tuning steps in this session (steps 2408 to 3698) in 5.0s\n"},
	} {
		var b bytes.Buffer
		Summary(&b, s, c.from)
		if !strings.HasSuffix(b.String(), c.want) {
			t.Errorf("from %d: ends %q, want %q", c.from, b.String()[max(0, b.Len()-100):], c.want)
		}
	}
	var b bytes.Buffer
	if Summary(&b, nil, 0); b.Len() != 0 {
		t.Errorf("Summary of no summary wrote %q", b.String())
	}
}

// The before/after table names each metric by its catalogue key, with
// its values read from the reports: here head_recall differs in each.
func TestSummaryRows(t *testing.T) {
	rep := func(head float64) metric.Report {
		return metric.Report{MeanRecall: 0.5, MinRecall: 0.25, HeadRecall: head}
	}
	s := &loop.Summary{ValBefore: rep(0.125), ValAfter: rep(0.375), TestBefore: rep(0.625), TestAfter: rep(0.875),
		TestObjBefore: make([]float64, len(metric.Objectives())), TestObjAfter: make([]float64, len(metric.Objectives()))}
	var b bytes.Buffer
	Summary(&b, s, 0)
	for _, want := range []string{
		"    mean_recall      0.5000     0.5000       0.5000      0.5000\n",
		"     min_recall      0.2500     0.2500       0.2500      0.2500\n",
		"    head_recall      0.1250     0.3750       0.6250      0.8750\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("Summary lacks %q:\n%s", want, b.String())
		}
	}
	for _, m := range metric.Scalars() {
		if !regexp.MustCompile(`(?m)^ *` + m.Key + ` +[-0-9.]+ +[-0-9.]+ +[-0-9.]+ +[-0-9.]+$`).MatchString(b.String()) {
			t.Errorf("Summary has no row %s:\n%s", m.Key, b.String())
		}
	}
}

func TestCells(t *testing.T) {
	for _, c := range []struct{ name, got, want string }{
		{"At in range", At([]float64{0.1, 0.25}, 1), "0.2500"},
		{"At past the end", At([]float64{0.1}, 1), "-"},
		{"At of no index", At([]float64{0.1}, -1), "-"},
		{"num4 NaN", num4(math.NaN()), "-"},
		{"num4", num4(1.0 / 3), "0.3333"},
		{"cell long", cell(strings.Repeat("a", 20) + strings.Repeat("b", 20)), strings.Repeat("a", 11) + "…" + strings.Repeat("b", 12)},
		{"tags none", TagsColumn(runs.Meta{}), "-"},
		{"tags", TagsColumn(runs.Meta{Tags: []string{"a", "b"}}), "a,b"},
	} {
		if c.got != c.want {
			t.Errorf("%s: %q, want %q", c.name, c.got, c.want)
		}
	}
}

func nan() float64 { var z float64; return z / z }

// A control refused for a key holding an escape sequence printed it raw
// in runs show: the line shows no byte a terminal acts on.
func TestShowControlEscaped(t *testing.T) {
	r, h := openRun(t, "viz-selmix")
	key := "\x1b]0;KEYPWN\x07"
	h.Controls = append(h.Controls, loop.Ack{Control: loop.Control{Op: loop.OpSet, Key: key, Value: "1"}, Step: 150, Err: "unknown key " + key})
	var b bytes.Buffer
	Show(&b, r, h)
	if want := "  step    150  set =1 (refused: unknown key )\n"; !strings.Contains(b.String(), want) || strings.ContainsAny(b.String(), "\x1b\x07") {
		t.Errorf("Show lacks %q or holds a control:\n%q", want, b.String())
	}
}

// --json printed a U+009B (C1 CSI) of a run's name raw: it is escaped.
func TestWriteJSONEscapesC1(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, map[string]string{"name": "x\u009b31m\x7f"}); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "{\n  \"name\": \"x\\u009b31m\\u007f\"\n}\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// Constraints read as constraints: every summary counts the classes at
// coverage ≥ α/K in each column, and a run that optimized a coverage
// objective says, against the bound, whether it held on validation at the
// end (first) and how it stands on test and at the best step.
func TestSummaryConstraint(t *testing.T) {
	// K = 4, α = 0.8: α/K = 0.2. Validation at the end: 3 of 4 (0.19 short).
	rep := func(cov ...float64) metric.Report {
		r := metric.Report{K: len(cov), Coverage: cov, MinCoverage: slices.Min(cov)}
		r.HeadCoverage, r.TailCoverage = (cov[0]+cov[1]+cov[2])/3, cov[3]
		r.MinHTCoverage = min(r.HeadCoverage, r.TailCoverage)
		return r
	}
	objs := make([]float64, len(metric.Objectives()))
	s := &loop.Summary{Steps: 100, Objective: metric.MeanRecallCov, Alpha: 0.8, TestObjBefore: objs, TestObjAfter: objs,
		ValBefore: rep(0.4, 0.3, 0.2, 0.1), ValAfter: rep(0.3, 0.26, 0.25, 0.19), TestBefore: rep(0.4, 0.3, 0.2, 0.1), TestAfter: rep(0.25, 0.25, 0.25, 0.25),
		Best: &loop.Best{Step: 60, Objective: metric.MeanRecallCov, Val: rep(0.3, 0.25, 0.25, 0.2), Test: rep(0.31, 0.3, 0.2, 0.1999999999), TestObj: objs}}
	var b bytes.Buffer
	Summary(&b, s, 0)
	out := b.String()
	for _, want := range []string{
		"coverage ≥ α/K met         3/4        3/4          4/4          3/4         4/4           4/4",
		"constraint: coverage ≥ α/K = 0.2000 (every class) UNMET on validation at the end: validation 3 of 4 met, min coverage 0.1900; test 4 of 4 met, min coverage 0.2500\n" +
			"  at best (step 60): validation 4 of 4 met, min coverage 0.2000; test 4 of 4 met, min coverage 0.2000\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	// Head/tail: head 0.27, tail 0.19 at the end on validation: 1 of 2.
	s.Objective = metric.MeanRecallHTCov
	b.Reset()
	Summary(&b, s, 0)
	if want := "constraint: coverage ≥ α/K = 0.2000 (head and tail) UNMET on validation at the end: validation 1 of 2 met, min head/tail coverage 0.1900;"; !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
	// Met on validation: it says so; an objective without a constraint
	// has no constraint line; α unknown (0) is the default 0.95.
	s.Objective, s.ValAfter = metric.MeanRecallCov, rep(0.25, 0.25, 0.25, 0.25)
	b.Reset()
	Summary(&b, s, 0)
	if !strings.Contains(b.String(), "(every class) met on validation at the end: validation 4 of 4 met") {
		t.Errorf("met constraint:\n%s", b.String())
	}
	s.Objective, s.Alpha = metric.MinRecall, 0
	b.Reset()
	Summary(&b, s, 0)
	if strings.Contains(b.String(), "constraint:") || !strings.Contains(b.String(), "coverage ≥ α/K met         2/4        4/4          3/4          2/4         4/4           2/4") {
		t.Errorf("min-recall with the default α (0.2375):\n%s", b.String())
	}
}

// A coverage that misses α/K never reads as α/K, beside it in the
// constraint line or in the table above it: 0.09496 against 0.095 is not
// 0.0950. A bound that 4 decimals would round (α/K = 0.00095 at K = 1000)
// has its digits.
func TestSummaryCoverageNearBound(t *testing.T) {
	rep := func(K int, low float64) metric.Report {
		cov := make([]float64, K)
		for k := range cov {
			cov[k] = 1.0 / float64(K)
		}
		cov[0] = low
		r := metric.Report{K: K, Coverage: cov, MinCoverage: low}
		r.HeadCoverage, r.TailCoverage, r.MinHTCoverage = 1/float64(K), 1/float64(K), 1/float64(K)
		return r
	}
	objs := make([]float64, len(metric.Objectives()))
	s := &loop.Summary{Steps: 100, Objective: metric.MeanRecallCov, Alpha: 0.95, TestObjBefore: objs, TestObjAfter: objs,
		ValBefore: rep(10, 0.1), ValAfter: rep(10, 0.09496), TestBefore: rep(10, 0.1), TestAfter: rep(10, 0.095)}
	var b bytes.Buffer
	Summary(&b, s, 0)
	out := b.String()
	for _, want := range []string{
		"constraint: coverage ≥ α/K = 0.0950 (every class) UNMET on validation at the end: validation 9 of 10 met, min coverage 0.09496; test 10 of 10 met, min coverage 0.0950\n",
		"min_coverage      0.1000    0.09496       0.1000      0.0950",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	s.ValAfter, s.TestAfter = rep(1000, 0.00094), rep(1000, 0.00095)
	s.ValBefore, s.TestBefore = s.ValAfter, s.TestAfter
	b.Reset()
	Summary(&b, s, 0)
	if want := "constraint: coverage ≥ α/K = 0.00095 (every class) UNMET on validation at the end: validation 999 of 1000 met, min coverage 0.0009; test 1000 of 1000 met, min coverage 0.00095\n"; !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
}

// oldCov is a run optimizing mean-recall@cov recorded before
// finetune.cov_margin existed (app/testdata/oldcov): no margin, so its ψ
// is the objective's reported ψ.
var oldCov = filepath.Join("..", "..", "app", "testdata", "oldcov", "20261126-0905-0b2b")

// With a coverage margin in force the ψ a run optimizes, and judges its
// best checkpoint on, is aimed at α/K + δ: 0.0372 where the objective's
// reported ψ, the test columns', is 0.8363 (issue 46). runs ls, runs
// show and the summary's best line name it "ψ aimed" and say what that
// is, from what the run's refreshes recorded; a run without a margin
// reads as before.
func TestAimedBest(t *testing.T) {
	id := filepath.Base(oldCov)
	plain, aimed := t.TempDir(), t.TempDir()
	runstest.Copy(t, oldCov, filepath.Join(plain, id), nil)
	runstest.Copy(t, oldCov, filepath.Join(aimed, id), func(name string, b []byte) []byte {
		if name == "events.jsonl" {
			// The built-in experiment's margin, in every refresh.
			b = bytes.ReplaceAll(b, []byte(`"hyper":{"objective":"mean-recall@cov",`), []byte(`"hyper":{"objective":"mean-recall@cov","cov_margin":"auto","cov_conf":0.95,`))
		}
		return b
	})
	for _, c := range []struct {
		root            string
		ls, show, best  string
		note, bestAimed bool
	}{
		{plain, " -0.0189 (60) ", "best      ψ mean-recall@cov -0.0189 at step 60 (validation)\n",
			"best: ψ mean-recall@cov -0.0189 on validation at step 60 (", false, false},
		{aimed, " aimed -0.0189 (60) ", "best      ψ aimed mean-recall@cov -0.0189 at step 60 (validation)\n",
			"best: ψ aimed mean-recall@cov -0.0189 on validation at step 60 (", true, true},
	} {
		var b bytes.Buffer
		if err := List(&b, c.root, nil); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(b.String()), "\n")
		if !strings.Contains(lines[1], c.ls) || strings.Contains(b.String(), AimedNote) != c.note {
			t.Errorf("runs ls (margin %v) wants %q in its row, a note %v:\n%s", c.bestAimed, c.ls, c.note, b.String())
		}
		b.Reset()
		if err := ListJSON(&b, c.root, nil); err != nil {
			t.Fatal(err)
		}
		var recs []Record
		if err := json.Unmarshal(b.Bytes(), &recs); err != nil || len(recs) != 1 || recs[0].BestAimed != c.bestAimed {
			t.Errorf("runs ls --json (margin %v): %v, %+v", c.bestAimed, err, recs)
		}

		r, err := runs.Open(c.root, id)
		if err != nil {
			t.Fatal(err)
		}
		h, err := record.Load(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Reset()
		Show(&b, r, h)
		Summary(&b, h.Final, h.SessionStart())
		out := b.String()
		for _, want := range []string{c.show, c.best} {
			if !strings.Contains(out, want) {
				t.Errorf("runs show (margin %v) lacks %q:\n%s", c.bestAimed, want, out)
			}
		}
		if n := strings.Count(out, AimedNote); n != map[bool]int{false: 0, true: 1}[c.note] {
			t.Errorf("runs show (margin %v) says what ψ aimed is %d times:\n%s", c.bestAimed, n, out)
		}
		if want := "ψ mean-recall@cov *"; !strings.Contains(out, want) {
			t.Errorf("runs show (margin %v): the test rows are the reported ψ, want %q:\n%s", c.bestAimed, want, out)
		}
	}
}

// runs show says what the coverage multipliers aimed at where a margin was
// in force: each class's α/K + δ_j by name at K ≤ 20, their range past it,
// the head's and the tail's for a group constraint, and nothing without a
// margin or a record of the aims (issue 46: "the coverage aim α/K + δ_j is
// never shown").
func TestAimsLine(t *testing.T) {
	ev := func(obj metric.Objective, margin loop.Margin, k int, aims []float64) record.RefreshEvent {
		var h loop.Hyper
		h.Objective, h.CovMargin = obj, margin
		return record.RefreshEvent{Step: 40, Hyper: h, Stats: loop.Refresh{K: k, Aims: aims}}
	}
	names := []record.Start{{ClassNames: []string{"cat", "dog", "owl"}}}
	many := make([]float64, 30)
	for i := range many {
		many[i] = 0.95/30 + float64(i)*1e-5
	}
	for _, c := range []struct {
		name string
		h    record.History
		want string
	}{
		{"per class", record.History{Starts: names, Refreshes: []record.RefreshEvent{ev(metric.MeanRecallCov, loop.MarginAuto, 3, []float64{0.3212, 0.3333, 0.33})}},
			"aims      α/K + δ at step 40: cat 0.3212, dog 0.3333, owl 0.3300"},
		{"capped", record.History{Starts: names, Refreshes: []record.RefreshEvent{ev(metric.MeanRecallCov, loop.MarginAuto, 3, []float64{0.3212, 1.0 / 3, 0.33})}},
			"aims      α/K + δ at step 40: cat 0.3212, dog 0.3333, owl 0.3300\n          at the cap 1/K, so held at less than the confidence asked: dog"},
		{"head and tail", record.History{Refreshes: []record.RefreshEvent{ev(metric.MeanRecallHTCov, loop.MarginAuto, 10, []float64{0.0961, 0.0987})}},
			"aims      α/K + δ at step 40: head 0.0961, tail 0.0987"},
		{"many classes", record.History{Refreshes: []record.RefreshEvent{ev(metric.MeanRecallCov, loop.MarginAuto, 30, many)}},
			"aims      α/K + δ at step 40: 0.0317–0.0320 over 30 classes"},
		{"no margin", record.History{Refreshes: []record.RefreshEvent{ev(metric.MeanRecallCov, 0, 3, []float64{0.3167, 0.3167, 0.3167})}}, ""},
		{"not recorded", record.History{Refreshes: []record.RefreshEvent{ev(metric.MeanRecallCov, loop.MarginAuto, 3, nil)}}, ""},
	} {
		if got := aimsLine(&c.h); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

package record

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"selmix/core/loop"
	"selmix/core/metric"
)

func seriesPtr(v float64) *float64 { return &v }

// seriesRefresh is a refresh of objective o whose every number differs.
func seriesRefresh(o metric.Objective, lambda []float64) *RefreshEvent {
	objs := make([]float64, len(metric.Objectives()))
	for i := range objs {
		objs[i] = 0.1 + float64(i)/100
	}
	rf := &RefreshEvent{Step: 40, Loss: seriesPtr(1.25), Stats: loop.Refresh{
		K: 4, S: 7.5, Psi: 0.625, Objectives: objs, Lambda: lambda,
		Predicted: seriesPtr(0.03), Realised: seriesPtr(-0.02),
		Report: metric.Report{K: 4, MeanRecall: 0.71, MinRecall: 0.32, HMean: 0.61, GMean: 0.66, MinCoverage: 0.18,
			Accuracy: 0.74, HeadRecall: 0.8, TailRecall: 0.5, MinHTRecall: 0.5, HeadCoverage: 0.3, TailCoverage: 0.2, MinHTCoverage: 0.2,
			Recall: []float64{0.9, 0.8, 0.5, 0.32}, Coverage: []float64{0.3, 0.28, 0.24, 0.18}},
	}}
	rf.Hyper.Objective = o
	return rf
}

func TestSeriesGet(t *testing.T) {
	rf := seriesRefresh(metric.MinHTRecall, []float64{0.4, 0.6}) // a head and a tail multiplier
	want := map[string]float64{
		"psi": 0.625, "s": 7.5, "loss": 1.25, "delta_psi/predicted": 0.03, "delta_psi/realised": -0.02,
		"lambda/head": 0.4, "lambda/tail": 0.6,
		"metrics/mean_recall": 0.71, "metrics/min_recall": 0.32, "metrics/min_ht_coverage": 0.2, "metrics/accuracy": 0.74,
	}
	for i, o := range metric.Objectives() {
		want["objectives/"+string(o)] = 0.1 + float64(i)/100
	}
	got := map[string]float64{}
	for _, s := range AllSeries() {
		v, ok := s.Get(rf)
		if !ok {
			t.Errorf("%s: not recorded, want a value", s.Key)
			continue
		}
		got[s.Key] = v
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			t.Errorf("%s = %v (%v), want %v", k, g, ok, w)
		}
	}
	if n := len(metric.Objectives()) + len(metric.Scalars()) + 7; len(got) != n {
		t.Errorf("%d series, want %d", len(got), n)
	}
	for _, v := range Vectors() {
		if v.Key == KeyLambda && v.Get(rf) != nil {
			t.Errorf("lambda per class = %v for head and tail multipliers, want none", v.Get(rf))
		}
	}

	// A refresh without a loss, a prediction or head and tail
	// multipliers, and with ψ of fewer objectives than this selmix knows.
	rf = seriesRefresh(metric.MinRecall, []float64{1, 2, 3, 4})
	rf.Loss, rf.Stats.Predicted, rf.Stats.Realised = nil, nil, nil
	rf.Stats.Objectives = rf.Stats.Objectives[:1]
	for _, s := range AllSeries() {
		v, ok := s.Get(rf)
		absent := s.Key == "loss" || strings.HasPrefix(s.Key, "delta_psi/") || strings.HasPrefix(s.Key, "lambda/") ||
			s.Objective != "" && s.Objective != metric.Objectives()[0]
		if ok == absent {
			t.Errorf("%s: recorded %v, want %v", s.Key, ok, !absent)
		}
		if !ok && !math.IsNaN(s.Value(rf)) {
			t.Errorf("%s: Value %v where not recorded, want NaN", s.Key, v)
		}
	}
	vecs := map[string][]float64{}
	for _, v := range Vectors() {
		vecs[v.Key] = v.Get(rf)
	}
	for k, w := range map[string][]float64{"recall": {0.9, 0.8, 0.5, 0.32}, "coverage": {0.3, 0.28, 0.24, 0.18}, "lambda": {1, 2, 3, 4}} {
		if g := vecs[k]; len(g) != len(w) || g[0] != w[0] || g[len(g)-1] != w[len(w)-1] {
			t.Errorf("%s = %v, want %v", k, g, w)
		}
	}
}

// TestSeriesNames: every key, label and figure name is one series'
// only, and the names the run format documents are the keys.
func TestSeriesNames(t *testing.T) {
	for _, field := range []struct {
		name string
		get  func(Series) string
	}{{"key", func(s Series) string { return s.Key }}, {"label", func(s Series) string { return s.Label }}, {"figure", func(s Series) string { return s.Figure }}} {
		seen := map[string]bool{}
		for _, s := range AllSeries() {
			n := field.get(s)
			if n == "" || seen[n] {
				t.Errorf("%s %q of %s is empty or not unique", field.name, n, s.Key)
			}
			seen[n] = true
		}
		for _, v := range Vectors() {
			if field.name == "key" && seen[v.Key] {
				t.Errorf("per-class key %q is a scalar series' too", v.Key)
			}
		}
	}
	o := metric.MinRecall
	s := ObjectiveSeries(o)
	if s.Key != "objectives/min-recall" || s.Label != "ψ min-recall" || s.Figure != "psi:min-recall" || s.Objective != o {
		t.Errorf("ObjectiveSeries(%s) = %q, %q, %q, %q", o, s.Key, s.Label, s.Figure, s.Objective)
	}
	m, _ := metric.LookupScalar("min_coverage")
	if s := ReportSeries(m); s.Key != "metrics/min_coverage" || s.Label != "min_coverage" || s.Figure != "min_coverage" || s.Scalar.Key != "min_coverage" {
		t.Errorf("ReportSeries(min_coverage) = %q, %q, %q", s.Key, s.Label, s.Figure)
	}
}

func TestLookupSeries(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"objectives/min-recall", "objectives/min-recall"},
		{"psi:min-recall", "objectives/min-recall"}, // export --metric's name
		{"ψ min-recall", "objectives/min-recall"},   // the comparison view's
		{"psi:hmean@cov", "objectives/hmean@cov"},
		{"mean_recall", "metrics/mean_recall"},
		{"metrics/mean_recall", "metrics/mean_recall"},
		{"mean-recall", "metrics/mean_recall"}, // metric.LookupScalar's old names
		{"worst-recall", "metrics/min_recall"},
		{"min-recall", "metrics/min_recall"},
		{"psi", "psi"},
		{"ψ", "psi"},
		{"s", "s"},
		{"Δψ realised", "delta_psi/realised"},
		{"predicted", "delta_psi/predicted"},
		{"lambda/tail", "lambda/tail"},
	} {
		s, ok := LookupSeries(c.name)
		if !ok || s.Key != c.want {
			t.Errorf("LookupSeries(%q) = %q, %v; want %q", c.name, s.Key, ok, c.want)
		}
	}
	for _, name := range []string{"psi:no-such", "objectives/", "metrics/", "lambda", "ψ aimed"} {
		if s, ok := LookupSeries(name); ok {
			t.Errorf("LookupSeries(%q) = %q, want none", name, s.Key)
		}
	}
}

// spelledElsewhere are the files outside the catalogue that may still
// spell a series' name, and why.
var spelledElsewhere = map[string]string{
	// "ψ "+ a rung's name: ψ at an ASHA rung, no series of a refresh.
	"runs/sweep/ashareport.go": "a rung's column",
	// A search's metric is a catalogue key, parsed in core, a layer below
	// the run store; runs/sweep's TestRankMetricIsTheCatalogues checks
	// every key it takes against the catalogue.
	"core/search/rankmetric.go": "a search's metric, read below the catalogue",
}

// TestSeriesSpelledOnce: no Go file but the catalogue (series.go) spells
// a series' name by hand: a string literal starting "psi:" or
// "objectives/", or "ψ " + something. The catalogue itself must (the
// witness that the search can find them).
func TestSeriesSpelledOnce(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	found := map[string][]string{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		hits, err := seriesSpellings(path)
		if err != nil {
			return err
		}
		if len(hits) > 0 {
			found[filepath.ToSlash(rel)] = hits
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	const catalogue = "runs/record/series.go"
	witness := strings.Join(found[catalogue], " ")
	for _, w := range []string{`"psi:"`, `"objectives/"`, `"ψ " +`} {
		if !strings.Contains(witness, w) {
			t.Errorf("the catalogue %s has no %s: the search cannot find it (found %v)", catalogue, w, found[catalogue])
		}
	}
	for file, hits := range found {
		if file == catalogue {
			continue
		}
		if _, ok := spelledElsewhere[file]; ok {
			continue
		}
		t.Errorf("%s spells a series' name by hand (%s): take it from runs/record's catalogue (ObjectiveSeries, LookupSeries)", file, strings.Join(hits, ", "))
	}
	for file, why := range spelledElsewhere {
		if _, ok := found[file]; !ok {
			t.Errorf("%s (%s) no longer spells a series' name: drop it from spelledElsewhere", file, why)
		}
	}
}

// seriesSpellings are the series' names spelled in the Go file at path:
// string literals starting "psi:" or "objectives/" and sums "ψ " + x,
// comments aside.
func seriesSpellings(path string) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var hits []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BasicLit:
			if n.Kind != token.STRING {
				break
			}
			v, err := strconv.Unquote(n.Value)
			if err != nil {
				break
			}
			for _, p := range []string{"psi:", "objectives/"} {
				if strings.HasPrefix(v, p) {
					hits = append(hits, strconv.Quote(p))
				}
			}
		case *ast.BinaryExpr:
			if lit, ok := n.X.(*ast.BasicLit); ok && n.Op == token.ADD && lit.Kind == token.STRING {
				if v, err := strconv.Unquote(lit.Value); err == nil && v == "ψ " {
					hits = append(hits, `"ψ " +`)
				}
			}
		}
		return true
	})
	return hits, nil
}

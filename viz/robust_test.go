package viz

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"

	"selmix/runs/runstest"
)

// The JSON log cannot hold NaN or ±Inf (encoding/json refuses them), but
// the decoded history can carry them once the engine or a future log
// format does: every figure must still be drawn, with the values left out
// and named in its CSV.
func TestNonFiniteValues(t *testing.T) {
	r := fixture(t, "viz-selmix")
	loadMatrices(t, r)
	h := r.Hist
	rs := h.Refreshes
	rs[2].Stats.Psi = math.NaN()
	rs[3].Stats.Report.MeanRecall = math.Inf(1)
	rs[4].Stats.Report.MinCoverage = math.Inf(-1)
	rs[1].Stats.G[0] = math.NaN()
	rs[0].Stats.G[5] = math.Inf(1)
	rs[len(rs)-1].Stats.P[3] = math.NaN()
	rs[5].Stats.Lambda[1] = math.Inf(1)
	rs[6].Hyper.S = math.NaN()
	rs[7].Stats.Objectives[0] = math.NaN()
	inf, big := math.Inf(-1), 1e9
	rs[8].Stats.Realised = &inf // ratio -Inf: the figure drops it
	rs[9].Stats.Realised = &big // a ratio far off the scale: drawn at its edge
	h.Final.TestAfter.Recall[2] = math.NaN()
	h.Final.TestBefore.Coverage[4] = math.Inf(1)
	h.Final.TestAfter.HMean = math.NaN()

	for _, format := range Formats {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			res, err := Export(r, dir, Options{Format: format, DPI: 30})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Files) != len(FigureNames()) {
				t.Fatalf("wrote %d figures, want %d", len(res.Files), len(FigureNames()))
			}
			for name, want := range map[string][]string{
				"metrics.csv":   {"psi,40,NaN,not plotted: NaN", "mean_recall,60,+Inf,not plotted: +Inf", "min_coverage,80,-Inf,not plotted: -Inf", "psi:mean-recall,140,NaN,not plotted: NaN"},
				"gain.csv":      {"G,0,0,T-shirt/top,5,Sandal,+Inf,not plotted: +Inf"},
				"mixup.csv":     {"NaN,not plotted: NaN"},
				"lambda.csv":    {"lambda,100,1,Trouser,+Inf,not plotted: +Inf"},
				"s.csv":         {"s,120,NaN,not plotted: NaN"},
				"linear.csv":    {"realised,140,160,-Inf,not plotted: -Inf", "ratio,140,160,-Inf,wrong sign; not plotted: -Inf", "ratio,160,180,5.111712881910337e+10,drawn at ±5"},
				"per-class.csv": {"recall,Pullover,fine-tuned,NaN,not plotted: NaN", "coverage,Coat,pre-trained,+Inf,not plotted: +Inf"},
			} {
				b, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				for _, w := range want {
					if !strings.Contains(string(b), w) {
						t.Errorf("%s lacks %q", name, w)
					}
				}
			}
			notes := strings.Join(res.Notes, "\n")
			for _, fig := range []string{"metrics", "gain", "mixup", "lambda", "s", "per-class", "linear"} {
				if !strings.Contains(notes, fig+": ") {
					t.Errorf("notes do not report the dropped values of %s: %q", fig, notes)
				}
			}
			cres, err := Compare([]*RunData{r, fixture(t, "viz-uniform")}, ObjectiveMetric("min-recall"), dir, Options{Format: format, DPI: 30})
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(dir, "compare-final.csv"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), "viz-selmix,hmean,NaN,not plotted: NaN") {
				t.Errorf("compare-final.csv does not report the NaN H-mean:\n%s", b)
			}
			if len(cres.Files) != 2 {
				t.Errorf("compare wrote %v", cres.Files)
			}
		})
	}
}

// loadMatrices reads every refresh's G and P into its Stats, where tests
// can change them (History.Matrices returns them from there).
func loadMatrices(t *testing.T, r *RunData) {
	t.Helper()
	for i := range r.Hist.Refreshes {
		G, P, err := r.Hist.Matrices(i)
		if err != nil {
			t.Fatal(err)
		}
		r.Hist.Refreshes[i].Stats.G, r.Hist.Refreshes[i].Stats.P = G, P
	}
}

// Degenerate runs: every value of a series dropped, a gain matrix of zeros
// (a colour bar of zero range panics in gonum/plot), no multipliers.
func TestDegenerateRuns(t *testing.T) {
	r := fixture(t, "viz-selmix")
	loadMatrices(t, r)
	for i := range r.Hist.Refreshes {
		rf := &r.Hist.Refreshes[i]
		rf.Stats.Psi = math.NaN()
		rf.Stats.Lambda = nil
		for j := range rf.Stats.G {
			rf.Stats.G[j] = 0
			rf.Stats.P[j] = 0
		}
	}
	r.Hist.Refreshes = r.Hist.Refreshes[:2] // fewer refreshes than snapshots
	r.Hist.Final = nil
	dir := t.TempDir()
	res, err := Export(r, dir, Options{DPI: 30})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(res.Files), len(FigureNames())-1; got != want {
		t.Errorf("wrote %d figures, want %d (all but lambda)", got, want)
	}
	if notes := strings.Join(res.Notes, "\n"); !strings.Contains(notes, "lambda: skipped") {
		t.Errorf("notes do not say lambda was skipped: %q", notes)
	}
	b, err := os.ReadFile(filepath.Join(dir, "per-class.csv"))
	if err != nil {
		t.Fatal(err)
	}
	// Without a final summary the bars compare validation reports.
	if !strings.Contains(string(b), "recall,T-shirt/top,pre-trained,") {
		t.Errorf("per-class.csv: %s", b)
	}
}

// TeX output is one self-contained file per figure with LaTeX-safe text:
// gonum/plot's TeX canvas writes any image it draws to a PNG file in the
// working directory, so figures must not draw images.
func TestTeXOutput(t *testing.T) {
	r := fixture(t, "viz-selmix")
	dir := t.TempDir()
	before, _ := filepath.Glob("gonum-pgf-image-*")
	if _, err := Export(r, dir, Options{Format: "tex"}); err != nil {
		t.Fatal(err)
	}
	if after, _ := filepath.Glob("gonum-pgf-image-*"); len(after) != len(before) {
		t.Errorf("TeX export wrote image files into the working directory: %v", after)
	}
	b, err := os.ReadFile(filepath.Join(dir, "metrics.tex"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.Contains(s, `$\psi$ min-recall`) {
		t.Error(`metrics.tex lacks "$\psi$ min-recall"`)
	}
	if strings.Contains(s, "ψ") {
		t.Error("metrics.tex has a raw ψ, which pdflatex rejects")
	}
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		ok   bool
	}{
		{"zero", Options{}, true},
		{"svg", Options{Format: "svg"}, true},
		{"bad format", Options{Format: "jpeg"}, false},
		{"dpi too low", Options{DPI: 2}, false},
		{"width only", Options{Width: vg.Inch}, false},
		{"both", Options{Width: 2 * vg.Inch, Height: vg.Inch}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.o.withDefaults()
			if (err == nil) != tc.ok {
				t.Errorf("withDefaults(%+v) error = %v, want ok=%v", tc.o, err, tc.ok)
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		w, h vg.Length
		ok   bool
	}{
		{"7x3", 7 * vg.Inch, 3 * vg.Inch, true},
		{"3.5x2.5in", 3.5 * vg.Inch, 2.5 * vg.Inch, true},
		{"10x5cm", 10 * vg.Centimeter, 5 * vg.Centimeter, true},
		{"600x300px", 6 * vg.Inch, 3 * vg.Inch, true}, // at 100 dpi
		{"252x144pt", 3.5 * vg.Inch, 2 * vg.Inch, true},
		{"7", 0, 0, false},
		{"x3", 0, 0, false},
		{"-7x3", 0, 0, false},
		{"NaNx3", 0, 0, false},
		{"0.1x0.1", 0, 0, false},
		{"7x3furlongs", 0, 0, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			w, h, err := ParseSize(tc.in, 100)
			if (err == nil) != tc.ok {
				t.Fatalf("ParseSize(%q) error = %v, want ok=%v", tc.in, err, tc.ok)
			}
			if tc.ok && (math.Abs(float64(w-tc.w)) > 1e-9 || math.Abs(float64(h-tc.h)) > 1e-9) {
				t.Errorf("ParseSize(%q) = %vx%v, want %vx%v", tc.in, w, h, tc.w, tc.h)
			}
		})
	}
}

func TestParseMetric(t *testing.T) {
	for _, name := range MetricNames() {
		m, err := ParseMetric(name)
		if err != nil || m.Name != name {
			t.Errorf("ParseMetric(%q) = %q, %v", name, m.Name, err)
		}
	}
	for _, bad := range []string{"", "psi:", "psi:accuracy", "recall"} {
		if _, err := ParseMetric(bad); err == nil {
			t.Errorf("ParseMetric(%q) succeeded", bad)
		}
	}
}

// A figure size set by the caller applies to every figure.
func TestSizeOverride(t *testing.T) {
	r := fixture(t, "viz-selmix")
	res, err := Export(r, t.TempDir(), Options{DPI: 40, Width: 4 * vg.Inch, Height: 3 * vg.Inch})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Files {
		if f.Pixels != [2]int{160, 120} {
			t.Errorf("%s is %v pixels, want 160x120", f.Name, f.Pixels)
		}
	}
}

// A log whose last line was torn by a crash still draws; the export says
// the line was ignored.
func TestTornLog(t *testing.T) {
	src, err := filepath.Glob(filepath.Join("testdata", "run", "*", "run.json"))
	if err != nil || len(src) == 0 {
		t.Fatalf("no fixture runs: %v", err)
	}
	from := filepath.Dir(src[0])
	dir := filepath.Join(t.TempDir(), filepath.Base(from))
	runstest.Copy(t, from, dir, func(name string, b []byte) []byte {
		switch name {
		case "events.jsonl":
			b = append(b, `{"seq":99,"kind":"refr`...)
		case "arrays.bin":
			b = append(b, "SXA1 a record cut by the crash"...)
		}
		return b
	})
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Export(r, filepath.Join(dir, "plots"), Options{DPI: 30})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Notes) == 0 || !strings.HasPrefix(res.Notes[0], "log: ") {
		t.Errorf("notes %q do not report the torn line", res.Notes)
	}
}

// A run whose every curve is flat but for rounding — one evaluation, or
// values one ulp apart — draws every figure kind, quickly and within a
// few megabytes (issue 43: such a metrics axis made an export grow to
// 24 GB on another CPU's BLAS kernel).
func TestFlatButForRounding(t *testing.T) {
	r := fixture(t, "viz-selmix")
	loadMatrices(t, r)
	up := func(v float64) float64 { return math.Nextafter(v, math.Inf(1)) }
	rs := r.Hist.Refreshes
	for i := range rs {
		st := &rs[i].Stats
		st.Psi = 0.5277840000000001
		if i%2 == 1 {
			st.Psi = up(st.Psi)
		}
		st.Report.MeanRecall, st.Report.MinCoverage = rs[0].Stats.Report.MeanRecall, rs[0].Stats.Report.MinCoverage
		if i%2 == 1 {
			st.Report.MeanRecall, st.Report.MinCoverage = up(st.Report.MeanRecall), up(st.Report.MinCoverage)
		}
		rs[i].Hyper.S = 1
		if i%2 == 1 {
			rs[i].Hyper.S = up(1)
		}
		for j := range st.Lambda {
			st.Lambda[j] = 0.25
			if i%2 == 1 {
				st.Lambda[j] = up(0.25)
			}
		}
	}
	one := *r
	h1 := *r.Hist
	h1.Refreshes = rs[:1]
	one.Hist = &h1
	for _, run := range []*RunData{r, &one} {
		for _, format := range Formats {
			dir := t.TempDir()
			if _, err := Export(run, dir, Options{Format: format, DPI: 30}); err != nil {
				t.Fatalf("%d refreshes, %s: %v", len(run.Hist.Refreshes), format, err)
			}
		}
	}
	if _, err := Compare([]*RunData{r, &one}, ObjectiveMetric("min-recall"), t.TempDir(), Options{DPI: 30}); err != nil {
		t.Fatal(err)
	}
}

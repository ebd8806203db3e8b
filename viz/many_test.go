package viz

import (
	"encoding/csv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/runs"
	"selmix/runs/record"
)

// synthRun is a run of K classes and n refreshes with random numbers,
// built in memory (G and P filled in, as History.Matrices returns them);
// named gives its classes names.
func synthRun(t testing.TB, K, n int, named bool) *RunData {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(K), uint64(n)))
	vec := func(scale float64) []float64 {
		v := make([]float64, K)
		for i := range v {
			v[i] = rng.Float64() * scale
		}
		return v
	}
	rep := func() metric.Report {
		r := metric.Report{K: K, Prior: vec(0), Recall: vec(1), Coverage: vec(2 / float64(K))}
		for _, x := range r.Recall {
			r.MeanRecall += x / float64(K)
		}
		return r
	}
	h := loop.DefaultHyper()
	hist := &record.History{Format: 2, Starts: []record.Start{{Total: 50 * (n - 1), K: K}}}
	if named {
		for i := range K {
			hist.Starts[0].ClassNames = append(hist.Starts[0].ClassNames, "name-"+strconv.Itoa(i))
		}
	}
	for i := range n {
		G, P := make([]float64, K*K), make([]float64, K*K)
		for j := range G {
			G[j], P[j] = rng.NormFloat64(), rng.Float64()/float64(K*K)
		}
		st := loop.Refresh{Step: 50 * i, K: K, S: 10, Report: rep(), Objectives: make([]float64, 9), Lambda: vec(1), G: G, P: P}
		if i > 0 {
			pred, real := rng.Float64(), rng.NormFloat64()
			st.Predicted, st.Realised = &pred, &real
		}
		hist.Refreshes = append(hist.Refreshes, record.RefreshEvent{Step: 50 * i, Total: 50 * (n - 1), State: loop.Running, Hyper: h, Stats: st})
	}
	hist.Final = &loop.Summary{Steps: 50 * (n - 1), TestBefore: rep(), TestAfter: rep(), TestObjBefore: make([]float64, 9), TestObjAfter: make([]float64, 9)}
	r, err := FromHistory(t.TempDir(), runs.Meta{ID: "synth", Name: "synth", Objective: "min-recall", Policy: "selmix"}, hist)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows[1:]
}

// With many classes every figure is drawn; heatmaps are at most 100×100
// block means, the per-class bars the 30 worst and 10 best classes over a
// histogram of all, the multipliers the 30 largest; CSVs hold what is
// drawn (and every class where that is cheap). K = 250 takes every path
// K = 1000 does (blocks of 3 classes, a last block of one) in a quarter
// of the time.
func TestManyClasses(t *testing.T) {
	const K = 250
	r := synthRun(t, K, 4, false)
	dir := t.TempDir()
	res, err := Export(r, dir, Options{DPI: 40})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != len(FigureNames()) {
		t.Fatalf("wrote %v, notes %v", res.Files, res.Notes)
	}
	// Block means of G at the last refresh, computed here entry by entry.
	last := r.Hist.Refreshes[3]
	mean := func(r0, r1, c0, c1 int) float64 {
		s := 0.0
		for i := r0; i <= r1; i++ {
			for j := c0; j <= c1; j++ {
				s += last.Stats.G[i*K+j]
			}
		}
		return s / float64((r1-r0+1)*(c1-c0+1))
	}
	// Each block is its first class and the range as its name.
	want := map[[4]string]float64{
		{"30", "30-32", "69", "69-71"}:       mean(30, 32, 69, 71),
		{"249", "249-249", "0", "0-2"}:       mean(249, 249, 0, 2),
		{"249", "249-249", "249", "249-249"}: mean(249, 249, 249, 249),
	}
	rows := readCSV(t, filepath.Join(dir, "gain.csv"))
	if len(rows) != 3*84*84 {
		t.Errorf("gain.csv has %d rows, want 3 heatmaps of 84×84 blocks of 3 classes", len(rows))
	}
	for _, row := range rows {
		key := [4]string{row[2], row[3], row[4], row[5]}
		if w, ok := want[key]; ok && row[1] == "150" {
			got, _ := strconv.ParseFloat(row[6], 64)
			if math.Abs(got-w) > 1e-12 {
				t.Errorf("block %v = %v, want %v", key, got, w)
			}
			delete(want, key)
		}
	}
	if len(want) > 0 {
		t.Errorf("gain.csv has no rows for blocks %v at step 150", want)
	}
	// The bars show the 30 lowest and 10 highest fine-tuned (test) recalls.
	rec := r.Hist.Final.TestAfter.Recall
	order := make([]int, K)
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return rec[order[a]] < rec[order[b]] })
	shown := shownClasses(rec, K)
	if len(shown) != 40 || shown[0] != order[0] || shown[29] != order[29] || shown[30] != order[K-10] || shown[39] != order[K-1] {
		t.Errorf("shown classes %v, want the 30 lowest then the 10 highest recalls", shown)
	}
	pc := readCSV(t, filepath.Join(dir, "per-class.csv"))
	var perClass, hist int
	binned := 0.0
	for _, row := range pc {
		switch row[0] {
		case "recall", "coverage":
			perClass++
		case "classes with recall in bin":
			hist++
			if row[2] == "fine-tuned" {
				n, _ := strconv.ParseFloat(row[3], 64)
				binned += n
			}
		}
	}
	if perClass != 2*2*K || hist != 2*histBins || binned != K {
		t.Errorf("per-class.csv: %d per-class rows (want %d), %d histogram rows (want %d) counting %v classes (want %d)", perClass, 4*K, hist, 2*histBins, binned, K)
	}
	if lam := readCSV(t, filepath.Join(dir, "lambda.csv")); len(lam) != K*4 {
		t.Errorf("lambda.csv has %d rows, want every class at every refresh (%d)", len(lam), K*4)
	}
	for _, f := range res.Files {
		if f.Name == "per-class.png" && f.Pixels[1] != 240 { // 6 in at 40 dpi
			t.Errorf("per-class figure is %d px high at 40 dpi, want 6 in", f.Pixels[1])
		}
	}
}

// A run without class names labels classes by index: "3", not "class 3",
// and heatmap rows by index alone, not "class 3 3".
func TestUnnamedClasses(t *testing.T) {
	for _, named := range []bool{false, true} {
		r := synthRun(t, 10, 3, named)
		dir := t.TempDir()
		if _, err := Export(r, dir, Options{Format: "tex"}); err != nil {
			t.Fatal(err)
		}
		rows := readCSV(t, filepath.Join(dir, "per-class.csv"))
		wantName := "3"
		if named {
			wantName = "name-3"
		}
		if rows[3][1] != wantName {
			t.Errorf("named %v: class 3 is %q in per-class.csv, want %q", named, rows[3][1], wantName)
		}
		tex, err := os.ReadFile(filepath.Join(dir, "gain.tex"))
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{`\selectfont class 3`, `\selectfont 3 3}`} {
			if strings.Contains(string(tex), bad) {
				t.Errorf("named %v: gain.tex labels a row %q", named, bad)
			}
		}
		if named && !strings.Contains(string(tex), `\selectfont name-3 3}`) {
			t.Error("named classes lost their names in gain.tex")
		}
	}
}

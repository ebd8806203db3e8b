package viz

import (
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"selmix/core/metric"
)

// A sweep's figure averages each configuration over its seeds: the CSV
// beside it holds, per group and refresh, the mean, the sample std and
// the number of seeds, and each group's pre-trained value (step 0).
func TestSweepCurves(t *testing.T) {
	obj := slices.Index(metric.Objectives(), "min-recall")
	seeds := func(offsets []float64, slope float64) []*RunData {
		var rs []*RunData
		for _, off := range offsets {
			r := synthRun(t, 4, 3, false)
			for k := range r.Hist.Refreshes {
				v := 0.5 + slope*float64(k)
				if k > 0 {
					v += off
				}
				r.Hist.Refreshes[k].Stats.Objectives[obj] = v
			}
			rs = append(rs, r)
		}
		return rs
	}
	gs := []SeedGroup{
		{Label: "policy=selmix", Runs: seeds([]float64{-0.01, 0, 0.01}, 0.1)},
		{Label: "policy=uniform", Runs: seeds([]float64{-0.02, 0.02}, 0.05)},
	}
	dir := t.TempDir()
	res, err := SweepCurves(gs, ObjectiveMetric("min-recall"), dir, Options{Format: "svg"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 1 || res.Files[0].Name != "sweep-psi_min-recall.svg" {
		t.Fatalf("files %+v", res.Files)
	}
	type row struct {
		group, step string
		std         float64 // NaN: none (the pre-trained row)
		seeds       string
		mean        float64
	}
	want := []row{
		{"policy=selmix", "pre-trained", nan, "3", 0.5},
		{"policy=selmix", "0", 0, "3", 0.5},
		{"policy=selmix", "50", 0.01, "3", 0.6},
		{"policy=selmix", "100", 0.01, "3", 0.7},
		{"policy=uniform", "pre-trained", nan, "2", 0.5},
		{"policy=uniform", "0", 0, "2", 0.5},
		{"policy=uniform", "50", 0.02 * math.Sqrt2, "2", 0.55},
		{"policy=uniform", "100", 0.02 * math.Sqrt2, "2", 0.6},
	}
	rows := readCSV(t, filepath.Join(dir, res.Files[0].CSV))
	if len(rows) != len(want) {
		t.Fatalf("%d CSV rows, want %d: %v", len(rows), len(want), rows)
	}
	num := func(s string) float64 {
		if s == "" {
			return nan
		}
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	close := func(a, b float64) bool { return math.IsNaN(a) && math.IsNaN(b) || math.Abs(a-b) < 1e-12 }
	for i, w := range want {
		r := rows[i]
		if r[0] != w.group || r[1] != w.step || r[3] != w.seeds || !close(num(r[2]), w.std) || !close(num(r[4]), w.mean) {
			t.Errorf("row %d = %v, want %+v", i, r, w)
		}
	}
}

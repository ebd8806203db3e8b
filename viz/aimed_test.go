package viz

import (
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"

	"selmix/core/loop"
	"selmix/core/metric"
)

// With a coverage margin in force the ψ a run optimizes is aimed at
// α/K + δ, not the objective's reported ψ (0.0372 against 0.8363, issue
// 46): the metrics figure's ψ panel and its CSV rows say "ψ aimed" and
// psi_aimed, beside the reported psi:<objective> rows; without a margin
// they are ψ and psi as before.
func TestMetricsAimedPsi(t *testing.T) {
	for _, c := range []struct {
		margin      loop.Margin
		name, title string
	}{
		{0, "psi", "ψ mean-recall@cov (optimized)"},
		{loop.MarginAuto, "psi_aimed", "ψ aimed mean-recall@cov (optimized)"},
	} {
		r := fixture(t, "viz-selmix")
		for i := range r.Hist.Refreshes {
			h := &r.Hist.Refreshes[i].Hyper
			h.Objective, h.CovMargin = metric.MeanRecallCov, c.margin
		}
		d, err := metricsFigure(newFigure(Options{Format: "png", DPI: 30}, fullWidth, 5*vg.Inch), r)
		if err != nil {
			t.Fatal(err)
		}
		rows := strings.Split(string(d.table.bytes()), "\n")
		want := c.name + "," + itoa(r.Hist.Refreshes[0].Step) + ","
		if !strings.HasPrefix(rows[1], want) {
			t.Errorf("margin %v: first CSV row %q, want the optimized ψ as %q", c.margin, rows[1], want)
		}
		other := map[string]string{"psi": "psi_aimed,", "psi_aimed": "psi,"}[c.name]
		for _, row := range rows {
			if strings.HasPrefix(row, other) {
				t.Errorf("margin %v: CSV row %q", c.margin, row)
				break
			}
		}
		if p := psiPanels(r); len(p) != 1 || p[0].m.Name != c.name || p[0].m.Title != c.title {
			t.Errorf("margin %v: ψ panel %+v, want %s titled %q", c.margin, p, c.name, c.title)
		}
	}
}

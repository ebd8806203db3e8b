package viz

import (
	"os"
	"path/filepath"
	"testing"

	"selmix/core/metric"
)

// After a live change of objective the metrics figure never joins two
// objectives' ψ on one axis (issue #37, bug 8): one ψ panel per
// objective optimized, each that objective's own ψ over the whole run
// (so its pre-trained value is its own), with a short title.
func TestMetricsAfterObjectiveChange(t *testing.T) {
	r := fixture(t, "viz-selmix")
	rs := r.Hist.Refreshes
	half := len(rs) / 2
	for i := half; i < len(rs); i++ {
		rs[i].Hyper.Objective = metric.MeanRecallCov
	}
	ps := psiPanels(r)
	if len(ps) != 2 || ps[0].objective != metric.MinRecall || ps[1].objective != metric.MeanRecallCov {
		t.Fatalf("ψ panels %+v, want min-recall then mean-recall@cov", ps)
	}
	for _, p := range ps {
		k := p.objective.Index()
		for i := range rs {
			if got, want := p.m.get(&rs[i]), rs[i].Stats.Objectives[k]; got != want {
				t.Errorf("%s panel at step %d: %v, want that objective's ψ %v", p.objective, rs[i].Step, got, want)
			}
		}
		if p.m.Title != "ψ "+string(p.objective)+" (optimized)" {
			t.Errorf("title %q", p.m.Title)
		}
	}
	if one := psiPanels(fixture(t, "viz-selmix")); len(one) != 1 || one[0].m.Name != "psi" {
		t.Errorf("a run that kept its objective: %+v, want the one psi panel", one)
	}
	dir := filepath.Join(t.TempDir(), "plots")
	if _, err := Export(r, dir, Options{DPI: 90}); err != nil {
		t.Fatal(err)
	}
	if out := os.Getenv("SELMIX_VIZ_KEEP"); out != "" {
		b, _ := os.ReadFile(filepath.Join(dir, "metrics.png"))
		os.WriteFile(out, b, 0o644)
	}
}

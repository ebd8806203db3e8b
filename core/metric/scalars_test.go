package metric

import "testing"

// Each scalar reads its own field of a report (every field a distinct
// value), and the old names find the metric they named.
func TestScalars(t *testing.T) {
	r := Report{MeanRecall: 1, MinRecall: 2, HMean: 3, GMean: 4, MinCoverage: 5, Accuracy: 6,
		HeadRecall: 7, TailRecall: 8, MinHTRecall: 9, HeadCoverage: 10, TailCoverage: 11, MinHTCoverage: 12}
	seen := map[string]bool{}
	for i, s := range Scalars() {
		if got := s.Get(&r); got != float64(i+1) {
			t.Errorf("%s reads %v, want %v", s.Key, got, i+1)
		}
		if seen[s.Key] {
			t.Errorf("%s twice", s.Key)
		}
		seen[s.Key] = true
		if s.Objective != "" && s.Objective.Index() < 0 {
			t.Errorf("%s: objective %q is none", s.Key, s.Objective)
		}
	}
	for _, c := range []struct{ name, want string }{
		{"min_recall", "min_recall"}, {"worst-recall", "min_recall"}, {"min-recall", "min_recall"},
		{"mean-recall", "mean_recall"}, {"min-ht-coverage", "min_ht_coverage"}, {"accuracy", "accuracy"},
	} {
		if s, ok := LookupScalar(c.name); !ok || s.Key != c.want {
			t.Errorf("LookupScalar(%q) = %q, %v; want %q", c.name, s.Key, ok, c.want)
		}
	}
	if _, ok := LookupScalar("psi"); ok {
		t.Error("LookupScalar(psi) found a report metric")
	}
}

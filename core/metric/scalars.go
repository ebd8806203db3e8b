package metric

// Scalar is one reported metric of a Report: the one catalogue of them
// that the exports (CSV, Parquet, TensorBoard tags), the figures and the
// comparison view share, so a number has one name everywhere.
type Scalar struct {
	// Key is its one name: the run format's report key
	// (docs/run-format.md), the exports' "metrics/<Key>", the figures'
	// CSVs and --metric.
	Key string
	// Title is how a figure's panel or axis is titled.
	Title string
	// Unit labels its axis: recall, coverage or accuracy.
	Unit string
	// Objective is the objective whose ψ is this number, "" if none
	// (min_recall is the true minimum; ψ min-recall smooths it).
	Objective Objective
	// Get reads it from a report.
	Get func(*Report) float64
}

// Scalars are the reported metrics, in the run format's order.
func Scalars() []Scalar {
	return []Scalar{
		{"mean_recall", "mean recall", "recall", MeanRecall, func(r *Report) float64 { return r.MeanRecall }},
		{"min_recall", "worst recall (min over classes)", "recall", "", func(r *Report) float64 { return r.MinRecall }},
		{"hmean", "H-mean of recalls", "recall", HMean, func(r *Report) float64 { return r.HMean }},
		{"gmean", "G-mean of recalls", "recall", GMean, func(r *Report) float64 { return r.GMean }},
		{"min_coverage", "min coverage", "coverage", "", func(r *Report) float64 { return r.MinCoverage }},
		{"accuracy", "accuracy", "accuracy", "", func(r *Report) float64 { return r.Accuracy }},
		{"head_recall", "head recall", "recall", "", func(r *Report) float64 { return r.HeadRecall }},
		{"tail_recall", "tail recall", "recall", "", func(r *Report) float64 { return r.TailRecall }},
		{"min_ht_recall", "min head/tail recall", "recall", MinHTRecall, func(r *Report) float64 { return r.MinHTRecall }},
		{"head_coverage", "head coverage", "coverage", "", func(r *Report) float64 { return r.HeadCoverage }},
		{"tail_coverage", "tail coverage", "coverage", "", func(r *Report) float64 { return r.TailCoverage }},
		{"min_ht_coverage", "min head/tail coverage", "coverage", "", func(r *Report) float64 { return r.MinHTCoverage }},
	}
}

// scalarAliases are the names the figures' CSVs and --metric used before
// the catalogue gave each metric one name; LookupScalar still takes them.
var scalarAliases = map[string]string{
	"mean-recall":     "mean_recall",
	"worst-recall":    "min_recall",
	"min-recall":      "min_recall", // worst-recall's name before ψ min-recall and it were told apart
	"min-ht-recall":   "min_ht_recall",
	"min-coverage":    "min_coverage",
	"min-ht-coverage": "min_ht_coverage",
}

// LookupScalar finds the metric named name: its Key, or a name it had
// before (mean-recall, worst-recall, min-recall, min-ht-recall,
// min-coverage, min-ht-coverage).
func LookupScalar(name string) (Scalar, bool) {
	if k, ok := scalarAliases[name]; ok {
		name = k
	}
	for _, s := range Scalars() {
		if s.Key == name {
			return s, true
		}
	}
	return Scalar{}, false
}

package search

import (
	"fmt"
	"strings"

	"selmix/core/metric"
)

// RankMetric reads what a search ranks its members by (the metric of
// [asha] and [pbt]): an objective's name ("min-recall": its ψ, with the
// members' own parameters), or a series of the catalogue by its key
// (docs/run-format.md, "Exports"): "objectives/<objective>" (the same ψ)
// or "metrics/<reported metric>" ("metrics/min_coverage"), always on
// validation. It returns the name a plan records: the objective's name,
// or "metrics/" and the reported metric's key. Every reported metric is
// better higher.
func RankMetric(s string) (string, error) {
	if o, ok := strings.CutPrefix(s, "objectives/"); ok {
		s = o
	}
	if _, err := metric.ParseObjective(s); err == nil {
		return s, nil
	}
	if k, ok := strings.CutPrefix(s, "metrics/"); ok {
		if m, ok := metric.LookupScalar(k); ok {
			return "metrics/" + m.Key, nil
		}
	}
	var keys []string
	for _, m := range metric.Scalars() {
		keys = append(keys, "metrics/"+m.Key)
	}
	if k, ok := strings.CutPrefix(s, "metrics/"); ok {
		return "", fmt.Errorf("metric %q: unknown reported metric %q (valid: %s)", s, k, strings.Join(keys, ", "))
	}
	_, err := metric.ParseObjective(s)
	return "", fmt.Errorf("metric %q: %s; or a reported metric: %s", s, strings.TrimPrefix(err.Error(), "metric: "), strings.Join(keys, ", "))
}

// checkRankMetric checks a table's metric, nil where none is given.
func checkRankMetric(m *string) error {
	if m == nil {
		return nil
	}
	_, err := RankMetric(*m)
	return err
}

// rankMetricOK reports whether a plan's recorded metric is one RankMetric
// returns ("" ranks by the optimized objective).
func rankMetricOK(m string) bool {
	if m == "" {
		return true
	}
	r, err := RankMetric(m)
	return err == nil && r == m
}

// mixedObjectives is the error of a search whose members optimize
// different objectives and which names no metric to rank them by.
func mixedObjectives(file, table string, names []string) error {
	return fmt.Errorf("%s: [%s] metric: the members optimize %s, whose ψ are not comparable: name a metric to rank them by, an objective or a reported metric (e.g. metric = %q or metric = \"metrics/min_recall\")", file, table, strings.Join(names, ", "), names[0])
}

package loop

import (
	"strings"
	"testing"

	"selmix/core/metric"
)

// A model that predicts one class, or gains that are all zero, is said
// in one line naming the fix (issue #37, bug 9); a model that learns is not.
func TestCannotLearn(t *testing.T) {
	one := metric.Report{K: 4, Coverage: []float64{0.01, 0.97, 0.01, 0.01}, Accuracy: 0.25}
	fine := metric.Report{K: 4, Coverage: []float64{0.3, 0.3, 0.2, 0.2}, Accuracy: 0.7}
	for _, tt := range []struct {
		name string
		r    metric.Report
		G    []float64
		want string
	}{
		{"one class", one, nil, "predicts class 1 for 97% of validation (accuracy 0.2500)"},
		{"zero gains", fine, make([]float64, 16), "the gain G is zero everywhere"},
		{"learns", fine, []float64{0, 0.1, -0.2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, ""},
		{"learns, no matrices", fine, nil, ""},
	} {
		got := CannotLearn(tt.r, tt.G)
		if tt.want == "" && got != "" || tt.want != "" && (!strings.Contains(got, tt.want) || !strings.Contains(got, "--weights") || !strings.Contains(got, "--pretrain full")) {
			t.Errorf("%s: %q, want %q and the fix", tt.name, got, tt.want)
		}
	}
}

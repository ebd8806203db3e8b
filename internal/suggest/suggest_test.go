package suggest

import (
	"reflect"
	"testing"
)

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "abc", 3}, {"abc", "", 3}, {"kitten", "sitting", 3},
		{"objectiv", "objective", 1}, {"runz", "runs", 1}, {"ψ", "ψs", 1}, {"flaw", "lawn", 2},
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := Distance(c.b, c.a); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetry)", c.b, c.a, got, c.want)
		}
	}
}

var objectives = []string{"mean-recall", "min-recall", "gmean", "hmean", "min-ht-recall", "mean-recall@cov", "hmean@cov", "mean-recall@ht-cov", "hmean@ht-cov"}

func TestDidYouMean(t *testing.T) {
	for _, c := range []struct {
		s    string
		cand []string
		want string
	}{
		{"minrecall", objectives, " (did you mean min-recall?)"},
		{"hmean@cv", objectives, " (did you mean hmean@cov?)"},
		{"finetune.objectiv", []string{"finetune.objective", "finetune.s", "finetune.steps"}, " (did you mean finetune.objective?)"},
		{"runz", []string{"run", "runs", "resume"}, " (did you mean run or runs?)"},
		{"selmux", []string{"selmix", "uniform", "random"}, " (did you mean selmix?)"},
		{"banana", objectives, ""},
		{"hmean", objectives, " (did you mean gmean?)"}, // itself is left out
	} {
		if got := DidYouMean(c.s, c.cand); got != c.want {
			t.Errorf("DidYouMean(%q) = %q, want %q", c.s, got, c.want)
		}
	}
}

func TestNearest(t *testing.T) {
	ids := []string{"20261122-0900-aaaa", "20261122-0900-aaab", "20261123-1000-b0b0", "20250101-0000-ffff", "20261122-0901-aaaa", "x", "20261122-0900-abcd"}
	got := Nearest("20261122-0900-aaac", ids, 5)
	want := []string{"20261122-0900-aaaa", "20261122-0900-aaab", "20261122-0901-aaaa", "20261122-0900-abcd", "20261123-1000-b0b0"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Nearest = %v, want %v", got, want)
	}
	if got := Nearest("a", []string{"b"}, 5); !reflect.DeepEqual(got, []string{"b"}) {
		t.Errorf("Nearest of one candidate = %v", got)
	}
}

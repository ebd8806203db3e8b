package viz

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func groupRunsOf(t *testing.T) []*RunData {
	t.Helper()
	var rs []*RunData
	for _, id := range []string{"20261123-1200-819c", "20261123-1201-c986"} {
		r, err := Load(filepath.Join("testdata", "run", id))
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	return rs
}

// GroupBy takes a whole key or its last part, groups by its value in
// order of first member, and says which key a bad one does not name.
func TestGroupBy(t *testing.T) {
	rs := groupRunsOf(t)
	for _, c := range []struct {
		name, key, whole, groups string
	}{
		{"last part", "policy", "finetune.policy", "selmix:1 uniform:1"},
		{"whole key", "finetune.policy", "finetune.policy", "selmix:1 uniform:1"},
		{"same value", "finetune.steps", "finetune.steps", "200:2"},
		{"top-level key", "seed", "seed", "1:2"},
	} {
		gs, whole, err := GroupBy(rs, c.key)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		var got []string
		for _, g := range gs {
			got = append(got, g.Value+":"+string(rune('0'+len(g.Runs))))
		}
		if whole != c.whole || strings.Join(got, " ") != c.groups {
			t.Errorf("%s: GroupBy(%q) = %q %q, want %q %q", c.name, c.key, whole, got, c.whole, c.groups)
		}
	}
	for _, c := range []struct{ name, key, want string }{
		{"no such key", "nope", `"nope": no run's config has that key (e.g. `},
		{"ambiguous", "lr", `"lr": ambiguous, it ends finetune.lr, pretrain.lr`},
	} {
		_, _, err := GroupBy(rs, c.key)
		var ke *KeyError
		if !errors.As(err, &ke) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: GroupBy(%q) error %v, want a *KeyError starting %q", c.name, c.key, err, c.want)
		}
	}
}

// CompareWithGroups lists the figures of Compare and then the grouped
// one; without groups, those of Compare alone.
func TestCompareWithGroups(t *testing.T) {
	rs := groupRunsOf(t)
	gs, key, err := GroupBy(rs, "policy")
	if err != nil {
		t.Fatal(err)
	}
	m := DefaultCompareMetric(rs)
	o := Options{Format: "svg"}
	alone, err := Compare(rs, m, t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		groups []Group
		extra  []string
	}{
		{"no groups", nil, nil},
		{"by policy", gs, []string{"compare-psi_min-recall-by-finetune.policy.svg", "compare-final-by-finetune.policy.svg"}},
	} {
		res, err := CompareWithGroups(rs, c.groups, key, m, t.TempDir(), o)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var names []string
		for _, f := range res.Files {
			names = append(names, f.Name)
		}
		want := []string{}
		for _, f := range alone.Files {
			want = append(want, f.Name)
		}
		want = append(want, c.extra...)
		if strings.Join(names, " ") != strings.Join(want, " ") {
			t.Errorf("%s: files %q, want %q", c.name, names, want)
		}
	}
}

package viz

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func groupRunsOf(t *testing.T) []*Run {
	t.Helper()
	var rs []*Run
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

package runs

import (
	"fmt"
	"strings"
	"testing"

	"selmix/core/experiment"
)

// GroupBy keeps groups in order of first member, members in order, and
// puts the runs without the key in Unset.
func TestGroupBy(t *testing.T) {
	vals := []string{"b", "", "a", "b", "", "a", "c"} // "" : no key
	gs := GroupBy(len(vals), func(i int) (string, bool) { return vals[i], vals[i] != "" })
	if got, want := fmt.Sprint(gs), "[{b [0 3]} {(unset) [1 4]} {a [2 5]} {c [6]}]"; got != want {
		t.Errorf("GroupBy = %s, want %s", got, want)
	}
	if gs := GroupBy(0, nil); gs != nil {
		t.Errorf("GroupBy of no runs = %v, want none", gs)
	}
}

// ParseConfig flattens a run's config.toml as its one reader reads it:
// every key, those the run did not record as what ran then, an old key
// name under the one it has now, a key of a newer selmix passed over.
func TestParseConfig(t *testing.T) {
	c, err := ParseConfig("seed = 3\nname = \"x\"\n[finetune]\ns = 10.5\nadapt = \"refresh\"\ncheckpoint_every = 2\nnewer = 1\n[model]\nhidden = [1, 2]\n", "c.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := Config{"seed": int64(3), "name": "x", "finetune.s": 10.5, "finetune.adapt": "refresh", "model.hidden": "[1 2]",
		"record.checkpoint_every": int64(2), "finetune.cov_margin": "0", "data.builtin": int64(1), "record.plugin": false}
	if len(c) != len(experiment.Keys()) {
		t.Errorf("%d keys, want the configuration's %d: %v", len(c), len(experiment.Keys()), c.Keys())
	}
	for k, v := range want {
		if c[k] != v {
			t.Errorf("%s = %#v, want %#v", k, c[k], v)
		}
	}
	for _, k := range []string{"finetune.checkpoint_every", "finetune.newer"} {
		if v, ok := c[k]; ok {
			t.Errorf("%s = %#v, want no such key", k, v)
		}
	}
	for _, text := range []string{"a = ", "[record]\nmatrices_every = \"x\"\n"} {
		if _, err := ParseConfig(text, "c.toml"); err == nil || !strings.HasPrefix(err.Error(), "c.toml: not a valid configuration: ") {
			t.Errorf("%q: %v, want not a valid configuration", text, err)
		}
	}
}

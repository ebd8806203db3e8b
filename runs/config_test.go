package runs

import (
	"fmt"
	"strings"
	"testing"
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

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig("seed = 3\nname = \"x\"\n[finetune]\ns = 10.5\nadapt = true\nl = [1, 2]\n", "c.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := Config{"seed": int64(3), "name": "x", "finetune.s": 10.5, "finetune.adapt": true, "finetune.l": "[1 2]"}
	if len(c) != len(want) {
		t.Errorf("%v, want %v", c, want)
	}
	for k, v := range want {
		if c[k] != v {
			t.Errorf("%s = %#v, want %#v", k, c[k], v)
		}
	}
	if _, err := ParseConfig("a = ", "c.toml"); err == nil || !strings.HasPrefix(err.Error(), "c.toml: ") {
		t.Errorf("bad TOML: %v", err)
	}
}

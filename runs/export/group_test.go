package export

import (
	"fmt"
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

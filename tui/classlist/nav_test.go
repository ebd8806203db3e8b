package classlist

import (
	"slices"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"selmix/tui/internal/fixture"
	"selmix/tui/runstate"
)

func navOver(run *runstate.State) *Nav {
	n := NewNav()
	n.Refresh(run.Cur, run)
	return &n
}

func TestNavDefaultAndCycle(t *testing.T) {
	cases := []struct {
		name string
		K    int
		want []string // titles from the start, one sort key press each
	}{
		{"K=10 starts in class order", 10, []string{"by class", "by recall ↑", "by coverage ↑", "by count ↑", "by gain ↓", "by name", "by class"}},
		{"K=100 has no counts to sort by", 100, []string{"by recall ↑", "by coverage ↑", "by gain ↓", "by name", "by class", "by recall ↑"}},
	}
	ctx := fixture.Plain()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := navOver(fixture.Apply(fixture.Info(c.K), fixture.Running(c.K, 2)))
			var got []string
			for i := range c.want {
				if i > 0 {
					if handled, _ := n.Update(fixture.Key("r"), ctx); !handled {
						t.Fatal("the sort key was not handled")
					}
				}
				got = append(got, n.Title())
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("titles %q, want %q", got, c.want)
			}
		})
	}
}

// The order follows the values of each refresh; worst first puts the
// refresh's worst class on top.
func TestNavOrderFollowsRefresh(t *testing.T) {
	snaps := fixture.Running(100, 3)
	run := fixture.Apply(fixture.Info(100), snaps[:1])
	n := navOver(run)
	if got, want := n.Order[0], run.Cur.Report.Worst; got != want {
		t.Errorf("first row %d, want the worst class %d", got, want)
	}
	run.Apply(snaps[1])
	n.Refresh(run.Cur, run)
	rec := run.Cur.Report.Recall
	if !slices.IsSortedFunc(n.Order, func(a, b int) int { return floatCmp(rec[a], rec[b]) }) {
		t.Error("order is not by the new refresh's recalls")
	}
}

func TestNavSearch(t *testing.T) {
	ctx := fixture.Plain()
	run := fixture.Run(1000, 2)
	n := navOver(run)
	press := func(keys ...string) (jump int) {
		jump = -1
		for _, k := range keys {
			handled, j := n.Update(fixture.Key(k), ctx)
			if !handled {
				t.Fatalf("key %q not handled", k)
			}
			if j >= 0 {
				jump = j
			}
		}
		return jump
	}
	prompt := func() string { return ansi.Strip(n.Prompt(ctx)) }

	press("/")
	if !n.Searching() || !strings.Contains(prompt(), "type part of a class name") {
		t.Fatalf("after /: searching %v, prompt %q", n.Searching(), prompt())
	}
	// Keys that are global elsewhere (q, space, s) are text in the prompt.
	press("q", "space", "s", "backspace", "backspace", "backspace")
	press("9", "9", "9")
	if p := prompt(); !strings.HasPrefix(p, "/ 999▏") || !strings.Contains(p, "1 match · class 999") {
		t.Errorf("prompt %q, want the query and its one match", p)
	}
	jump := press("enter")
	if n.Searching() || n.Found != 999 || n.Order[jump] != 999 {
		t.Errorf("enter: searching %v, found %d, jump to row %d (class %d); want class 999", n.Searching(), n.Found, jump, n.Order[jump])
	}
	press("/", "z", "e", "b", "r", "a", "enter")
	if !n.Searching() || !strings.Contains(prompt(), "no class matches") {
		t.Errorf("enter without a match: searching %v, prompt %q; want the prompt kept, saying so", n.Searching(), prompt())
	}
	press("esc")
	if n.Searching() || n.Found != 999 {
		t.Errorf("esc: searching %v, found %d; want the prompt closed and the last find kept", n.Searching(), n.Found)
	}
	press("esc")
	if n.Found != -1 {
		t.Errorf("esc outside the prompt: found %d, want the mark cleared", n.Found)
	}
	if handled, _ := n.Update(fixture.Key("esc"), ctx); handled {
		t.Error("esc with nothing to clear was taken from the pane")
	}
}

// Sorted by gain before G arrives: class order, and the title says why.
func TestNavGainLoading(t *testing.T) {
	run, full := fixture.GLoading(100)
	n := navOver(run)
	for n.By() != ByGain {
		n.Update(fixture.Key("r"), fixture.Plain())
	}
	if got := n.Title(); got != "by gain ↓ (G loading…)" {
		t.Errorf("title %q, want it to say G is loading", got)
	}
	if !slices.IsSorted(n.Order) {
		t.Error("without G the order is not class order")
	}
	n.Refresh(full, run)
	g := Gains(nil, full.G, full.K)
	if !slices.IsSortedFunc(n.Order, func(a, b int) int { return floatCmp(-g[a], -g[b]) }) {
		t.Error("once G arrives the order is not by gain")
	}
	if n.Title() != "by gain ↓" {
		t.Errorf("title %q once G arrived", n.Title())
	}
}

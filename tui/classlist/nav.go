package classlist

import (
	"fmt"
	"math"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"selmix/core/loop"
	"selmix/tui/pane"
	"selmix/tui/runstate"
)

// Nav is a pane's order and search over the classes of the current
// refresh: the sort key (cycled by the sort key), the rows in that order,
// and the "/" prompt that jumps to a class. The pane keeps its scroll
// and moves it where Update says.
type Nav struct {
	by     By
	chosen bool // the user picked by; until then it follows Default(K)

	// Order is the class shown at each row, computed when a refresh or
	// a key arrives.
	Order []int
	vals  Values
	K     int
	rs    *loop.Refresh // the refresh the values are from

	searching bool
	query     []rune
	matches   int
	pos       int // row of the match Enter would jump to, -1 none

	// Found is the class the last search jumped to (marked in the
	// list), -1 for none.
	Found int
}

// NewNav returns a Nav with nothing found.
func NewNav() Nav { return Nav{Found: -1, pos: -1} }

// By is the order in use.
func (n *Nav) By() By { return n.by }

// Refresh recomputes the gains and the order for rs (nil: no refresh
// yet) and the run's class names and training counts.
func (n *Nav) Refresh(rs *loop.Refresh, run *runstate.State) {
	if rs == nil {
		n.K, n.Order = 0, n.Order[:0]
		return
	}
	if !n.chosen {
		n.by = Default(rs.K)
	}
	n.K, n.rs = rs.K, rs
	n.vals = Values{
		Recall:   rs.Report.Recall,
		Coverage: rs.Report.Coverage,
		Counts:   run.Info.TrainCounts,
		Gain:     n.vals.Gain[:0],
		Name:     run.ClassName,
	}
	n.sort()
	if n.Found >= n.K {
		n.Found = -1
	}
}

func (n *Nav) sort() {
	// The gains cost O(K²): only an order by gain computes them.
	if n.by == ByGain && len(n.vals.Gain) == 0 && n.rs != nil {
		n.vals.Gain = Gains(n.vals.Gain, n.rs.G, n.K)
	}
	n.Order = Sort(n.Order, n.by, n.K, n.vals)
	if n.searching {
		n.find()
	}
}

// GainLoading reports that the order is by gain but G has not arrived.
func (n *Nav) GainLoading() bool { return n.by == ByGain && len(n.vals.Gain) == 0 }

// Gain is max_j G_ij of class k, NaN while G is not loaded (or the
// order is not by gain).
func (n *Nav) Gain(k int) float64 {
	if k < len(n.vals.Gain) {
		return n.vals.Gain[k]
	}
	return math.NaN()
}

// Title is the order as a pane title shows it.
func (n *Nav) Title() string {
	if n.GainLoading() {
		return n.by.String() + " (G loading…)"
	}
	return n.by.String()
}

// Searching reports that the prompt is open: the pane takes every key.
func (n *Nav) Searching() bool { return n.searching }

// Update handles the sort and search keys. It reports whether it used kp
// and, when a search jumped, the row to show (else -1).
func (n *Nav) Update(kp tea.KeyPressMsg, ctx *pane.Context) (handled bool, jump int) {
	k := ctx.Keys
	if n.searching {
		switch {
		case key.Matches(kp, k.Cancel):
			n.searching = false
		case key.Matches(kp, k.Accept):
			if n.pos >= 0 {
				n.searching = false
				n.Found = n.Order[n.pos]
				return true, n.pos
			}
		case kp.String() == "backspace":
			if len(n.query) > 0 {
				n.query = n.query[:len(n.query)-1]
			}
			n.find()
		case kp.String() == "ctrl+u":
			n.query = n.query[:0]
			n.find()
		case kp.Text != "":
			n.query = append(n.query, []rune(kp.Text)...)
			n.find()
		}
		return true, -1 // a prompt takes every key
	}
	switch {
	case key.Matches(kp, k.Sort):
		n.by, n.chosen = n.next(), true
		n.sort()
	case key.Matches(kp, k.Search):
		if n.K == 0 {
			return false, -1
		}
		n.searching, n.query, n.matches, n.pos = true, n.query[:0], 0, -1
	case key.Matches(kp, k.Cancel) && n.Found >= 0:
		n.Found = -1
	default:
		return false, -1
	}
	return true, -1
}

// next is the order after the current one, skipping those the run cannot
// sort by (no training counts). Gain is kept even before G arrives: the
// title says it is loading.
func (n *Nav) next() By {
	b := n.by
	for range nBy {
		b = (b + 1) % nBy
		if b == ByGain || n.vals.Has(b, n.K) {
			return b
		}
	}
	return n.by
}

func (n *Nav) find() {
	n.pos, n.matches = Find(n.Order, n.vals.Name, string(n.query))
}

// Prompt is the search line while the prompt is open.
func (n *Nav) Prompt(ctx *pane.Context) string {
	th, k := ctx.Theme, ctx.Keys
	status := ""
	switch {
	case len(n.query) == 0:
		status = "type part of a class name or its index"
	case n.pos < 0:
		status = th.Render(th.Bad, "no class matches")
	default:
		status = fmt.Sprintf("%d match", n.matches)
		if n.matches != 1 {
			status += "es"
		}
		status += " · " + n.vals.Name(n.Order[n.pos])
	}
	return th.Render(th.Accent, k.Search.Help().Key+" "+string(n.query)+"▏") + "  " + th.Render(th.Dim, status) +
		th.Render(th.Dim, fmt.Sprintf("  %s jump  %s cancel", k.Accept.Help().Key, k.Cancel.Help().Key))
}

// KeyHelp is the bindings a pane with a Nav adds to its help.
func KeyHelp(ctx *pane.Context) []key.Binding {
	return []key.Binding{ctx.Keys.Sort, ctx.Keys.Search}
}

// PromptHelp is the help while the prompt is open.
func PromptHelp(ctx *pane.Context) []key.Binding {
	jump := ctx.Keys.Accept // a copy: the shared binding keeps its help
	jump.SetHelp(jump.Help().Key, "jump")
	return []key.Binding{jump, ctx.Keys.Cancel}
}

package heatmap

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"selmix/core/gain"
	"selmix/core/loop"

	"selmix/tui/internal/fixture"
	"selmix/tui/pane"
	"selmix/tui/runstate"
	"selmix/tui/style"
)

func TestView(t *testing.T) {
	fixture.Cases(t, New, fixture.Golden, []fixture.Case{
		{Name: "waiting", Run: runstate.New(fixture.Info(10)), W: 60, H: 5},
		{Name: "k10-side", Run: fixture.Run(10, 4), W: 78, H: 17},
		{Name: "k10-compact", Run: fixture.Run(10, 4), W: 58, H: 13},
		{Name: "k10-compact-worst", Run: fixture.Run(10, 4), W: 58, H: 13, Keys: []string{"w"}},
		{Name: "k10-stacked", Run: fixture.Run(10, 4), W: 40, H: 30},
		{Name: "k10-too-small", Run: fixture.Run(10, 4), W: 30, H: 6},
		{Name: "k100-aggregated", Run: fixture.Run(100, 2), W: 78, H: 17},
		{Name: "k100-scrolled", Run: fixture.Run(100, 2), W: 78, H: 17, Keys: []string{"a", "j", "j", "l"}},
	})
}

// A masked (non-positive) gain must never be drawn like a positive one,
// even without colour.
func TestMaskedCellsDistinct(t *testing.T) {
	run := fixture.Run(10, 1)
	m := New(fixture.Plain(), run)
	m.SetSize(78, 17)
	lines := strings.Split(m.View(), "\n")
	rs := run.Cur
	for i := range rs.K {
		row := []rune(lines[2+i])
		for j := range rs.K {
			cell := string(row[m.labW()+1+2*j : m.labW()+3+2*j])
			masked := strings.ContainsAny(cell, "·:")
			if (rs.G[i*rs.K+j] <= 0) != masked {
				t.Errorf("G[%d,%d] = %g drawn as %q", i, j, rs.G[i*rs.K+j], cell)
			}
		}
	}
}

// The view is drawn in Update: a refresh reaches it with RefreshMsg.
func TestRedrawOnRefresh(t *testing.T) {
	snaps := fixture.Running(10, 3)
	run := fixture.Apply(fixture.Info(10), snaps[:1])
	m := New(fixture.Plain(), run)
	m.SetSize(78, 17)
	before := m.View()
	run.Apply(snaps[1])
	m.Update(pane.RefreshMsg{})
	if after := m.View(); after == before {
		t.Error("view unchanged after a new refresh")
	}
}

func TestViewK1000(t *testing.T) {
	run := fixture.Run(1000, 3)
	many := func(k string, n int) []string { return slices.Repeat([]string{k}, n) }
	fixture.Cases(t, New, fixture.GoldenTitled, []fixture.Case{
		{Name: "aggregated", Run: run, W: 78, H: 17},
		{Name: "block-selected", Run: run, W: 78, H: 17, Keys: []string{"l", "l", "j"}},
		{Name: "zoomed", Run: run, W: 78, H: 17, Keys: []string{"l", "l", "j", "enter"}},
		{Name: "zoomed-scrolled", Run: run, W: 78, H: 17, Keys: []string{"l", "l", "j", "z", "j", "j", "l"}},
		{Name: "zoomed-last-block", Run: run, W: 78, H: 17, Keys: append(many("j", 30), append(many("l", 30), "z")...)},
		{Name: "worst", Run: run, W: 78, H: 17, Keys: []string{"w"}},
		{Name: "top-p", Run: run, W: 78, H: 17, Keys: []string{"t"}},
		{Name: "worst-then-out", Run: run, W: 78, H: 17, Keys: []string{"w", "esc"}},
		{Name: "scroll-worst", Run: run, W: 78, H: 17, Keys: []string{"a", "w"}},
		{Name: "wide", Run: run, W: 86, H: 19},
		{Name: "stacked", Run: run, W: 40, H: 30, Keys: []string{"w"}},
	})
}

// The jump keys land where an independent search of G and P says.
func TestJumps(t *testing.T) {
	run := fixture.Run(1000, 2)
	// The fixture's largest P is in the worst row: move it elsewhere so
	// the two jumps differ.
	rs := &loop.Refresh{}
	*rs = *run.Cur
	K := rs.K
	rs.P = slices.Clone(rs.P)
	rs.P[3*K+7] = 0.9
	run.Cur = rs
	top := 0
	for i, p := range rs.P {
		if p > rs.P[top] {
			top = i
		}
	}
	w := rs.Report.Worst
	wj := 0
	for j := range K {
		if rs.P[w*K+j] > rs.P[w*K+wj] {
			wj = j
		}
	}
	cases := []struct {
		key  string
		want cell
	}{{"t", cell{top / K, top % K}}, {"w", cell{w, wj}}}
	for _, c := range cases {
		t.Run(c.key, func(t *testing.T) {
			m := New(fixture.Plain(), run)
			v := fixture.View(t, m, 78, 17, c.key)
			if !m.hasTarget || m.target != c.want {
				t.Fatalf("target %v (set %v), want %v", m.target, m.hasTarget, c.want)
			}
			if m.zoom == nil || !m.zoom.has(c.want) {
				t.Errorf("zoom %+v does not hold the target %v", m.zoom, c.want)
			}
			status := fmt.Sprintf("▸ row %d · col %d: G %+.1e, P %.3g", c.want.i, c.want.j, rs.G[c.want.i*K+c.want.j], rs.P[c.want.i*K+c.want.j])
			if !strings.Contains(v, status) {
				t.Errorf("view does not say %q:\n%s", status, v)
			}
			if !strings.Contains(v, "[]") {
				t.Errorf("the target cell is not marked:\n%s", v)
			}
		})
	}
}

// Before G and P arrive the pane says so, takes keys without effect, and
// draws them once they come.
func TestLoading(t *testing.T) {
	run, full := fixture.GLoading(1000)
	m := New(fixture.Plain(), run)
	fixture.GoldenTitled(t, m, 78, 17, "w", "t", "enter", "a", "j", "esc")
	if v := m.View(); !strings.Contains(v, "loading G/P…") {
		t.Fatalf("no loading note:\n%s", v)
	}
	run.Cur = full
	m.Update(pane.RefreshMsg{})
	if v := m.View(); strings.Contains(v, "loading") || !strings.Contains(v, "G (row i, col j)") {
		t.Errorf("G and P arrived but the view is:\n%s", v)
	}
	// A short G (a bad file) is "not loaded", never an index panic.
	bad := *full
	bad.G = bad.G[:10]
	run.Cur = &bad
	m.Update(pane.RefreshMsg{})
	if v := m.View(); !strings.Contains(v, "loading G/P…") {
		t.Errorf("a G of the wrong size is drawn:\n%s", v)
	}
}

// A worst row P gives no mass (every gain masked): w goes to its largest
// gain and says so.
func TestJumpWorstWithoutP(t *testing.T) {
	run := fixture.Run(1000, 2)
	rs := &loop.Refresh{}
	*rs = *run.Cur
	K, w := rs.K, rs.Report.Worst
	rs.P = slices.Clone(rs.P)
	clear(rs.P[w*K : (w+1)*K])
	best := 0
	for j := range K {
		if rs.G[w*K+j] > rs.G[w*K+best] {
			best = j
		}
	}
	run.Cur = rs
	m := New(fixture.Plain(), run)
	v := fixture.View(t, m, 78, 17, "w")
	if m.target != (cell{w, best}) {
		t.Errorf("target %v, want the worst row at its largest G %v", m.target, cell{w, best})
	}
	if !strings.Contains(v, "(worst class, no P: its largest G)") {
		t.Errorf("status does not say P gives the row nothing:\n%s", v)
	}
}

// P is labelled as the policy in force derives it (issue #37, bug 7): a
// run set to uniform live no longer says softmax(s·G).
func TestPLabelFollowsPolicy(t *testing.T) {
	for _, tt := range []struct {
		policy    gain.Policy
		want, not string
	}{
		{gain.SelMix, "P = softmax(s·G)", "policy selmix"},
		{gain.Uniform, "P = 1/K² uniform", "softmax"},
		{gain.Greedy, "P = argmax G", "softmax"},
	} {
		snaps := fixture.Running(10, 2)
		for i := range snaps {
			snaps[i].Hyper.Policy = tt.policy
		}
		m := New(fixture.Plain(), fixture.Apply(fixture.Info(10), snaps))
		m.SetSize(78, 17)
		v := m.View()
		if !strings.Contains(v, tt.want) || strings.Contains(v, tt.not) {
			t.Errorf("policy %s: want %q and no %q in\n%s", tt.policy, tt.want, tt.not, v)
		}
	}
}

// Two lines short of the full key, K = 10 still shows whole: one key
// line, the range of G and s in the titles (the numbers computed here),
// and the marked cell's status in the key's place; with room, the full
// key.
func TestCompactKey(t *testing.T) {
	const K = 10
	run := fixture.Run(K, 4)
	rs := run.Cur
	gMin, gMax, pMax := 0.0, 0.0, 0.0
	for i := range rs.G {
		gMin, gMax, pMax = min(gMin, rs.G[i]), max(gMax, math.Abs(rs.G[i])), max(pMax, rs.P[i])
	}
	lines := func(w, h int, keys ...string) []string {
		m := New(fixture.Plain(), run)
		m.SetSize(w, h)
		for _, k := range keys {
			m.Update(fixture.Key(k))
		}
		return strings.Split(m.View(), "\n")
	}
	if got, want := CompactRows(K), FullRows(K)-2; got != want || want != 15 {
		t.Errorf("CompactRows(%d) = %d, FullRows %d", K, got, FullRows(K))
	}
	v := lines(58, CompactRows(K)-2)
	title := fmt.Sprintf("G(i,j) %+.1e…%+.1e", gMin, gMax)
	if !strings.HasPrefix(v[0], title) || !strings.Contains(v[0], "P = softmax(s·G)  s = "+style.Trimmed(rs.S)) {
		t.Errorf("compact titles %q, want %q and s", v[0], title)
	}
	for i := range K {
		if !strings.HasPrefix(v[2+i], strconv.Itoa(i)+" ") {
			t.Errorf("compact: line %d is %q, want class %d's row", 2+i, v[2+i], i)
		}
	}
	key := v[2+K]
	if !strings.HasPrefix(key, "G ") || !strings.Contains(key, "P ") || !strings.Contains(key, fmt.Sprintf("≤%.3g", pMax)) {
		t.Errorf("compact key %q, want G's and P's scale up to %.3g", key, pMax)
	}
	v = lines(58, CompactRows(K)-2, "w")
	if w := rs.Report.Worst; !strings.HasPrefix(v[2+K], "▸ row "+strconv.Itoa(w)) {
		t.Errorf("compact, w: last line %q, want the worst class %d's cell", v[2+K], w)
	}
	v = lines(58, FullRows(K)-2)
	if !strings.HasPrefix(v[0], "G (row i, col j)") || !strings.HasPrefix(v[2+K], "G: ") || !strings.HasPrefix(v[3+K], "P: ") {
		t.Errorf("full key:\n%s", strings.Join(v, "\n"))
	}

}

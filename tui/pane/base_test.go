package pane

import (
	"testing"

	tea "charm.land/bubbletea/v2"

	"selmix/tui/keys"
)

func TestScroll(t *testing.T) {
	type op func(s *Scroll, n, rows int)
	by := func(d int) op { return func(s *Scroll, n, rows int) { s.ScrollBy(d, n, rows) } }
	set := func(o int) op { return func(s *Scroll, n, rows int) { s.SetOffset(o, n, rows) } }
	see := func(i int) op { return func(s *Scroll, n, rows int) { s.EnsureVisible(i, n, rows) } }
	bottom := func(s *Scroll, n, rows int) { s.GotoBottom(n, rows) }
	top := func(s *Scroll, n, rows int) { s.GotoTop(n, rows) }
	cases := []struct {
		name           string
		tail           bool
		n, rows        int
		ops            []op
		wantLo, wantHi int
	}{
		{"starts at the top", false, 100, 10, nil, 0, 10},
		{"down three", false, 100, 10, []op{by(1), by(1), by(1)}, 3, 13},
		{"up past the top", false, 100, 10, []op{by(-5)}, 0, 10},
		{"down past the end", false, 100, 10, []op{by(500)}, 90, 100},
		{"bottom then up", false, 100, 10, []op{bottom, by(-1)}, 89, 99},
		{"fewer lines than rows", false, 5, 10, []op{by(3)}, 0, 5},
		{"no rows: an empty window", false, 5, 0, []op{by(3)}, 3, 3},
		{"set then top", false, 100, 10, []op{set(40), top}, 0, 10},
		{"ensure below", false, 100, 10, []op{see(25)}, 16, 26},
		{"ensure above", false, 100, 10, []op{set(50), see(45)}, 45, 55},
		{"ensure inside stays", false, 100, 10, []op{set(50), see(55)}, 50, 60},
		{"tail follows", true, 30, 5, nil, 25, 30},
		{"tail scrolled up", true, 30, 5, []op{by(-3)}, 22, 27},
		{"tail back at the end follows", true, 30, 5, []op{by(-3), by(3)}, 25, 30},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := Scroll{}
			if c.tail {
				s = NewTail()
			}
			for _, o := range c.ops {
				o(&s, c.n, c.rows)
			}
			if lo, hi := s.Window(c.n, c.rows); lo != c.wantLo || hi != c.wantHi {
				t.Errorf("Window = [%d, %d), want [%d, %d)", lo, hi, c.wantLo, c.wantHi)
			}
		})
	}
}

// A scroll keeps its offset as lines come and go; a tail scroll pinned
// by the user stays put while lines are added, one at the end follows.
func TestScrollLinesChange(t *testing.T) {
	s := Scroll{}
	s.SetOffset(40, 100, 10)
	if lo, _ := s.Window(45, 10); lo != 35 {
		t.Errorf("after the lines shrink to 45, offset %d, want 35 (clamped on read)", lo)
	}
	if lo, _ := s.Window(100, 10); lo != 40 {
		t.Errorf("after they grow back, offset %d, want the 40 asked for", lo)
	}
	tail := NewTail()
	if lo, _ := tail.Window(50, 10); lo != 40 {
		t.Errorf("tail offset %d, want 40", lo)
	}
	tail.ScrollBy(-2, 50, 10)
	if lo, _ := tail.Window(60, 10); lo != 38 {
		t.Errorf("pinned tail after 10 more lines: offset %d, want 38", lo)
	}
	tail.GotoBottom(60, 10)
	if lo, _ := tail.Window(70, 10); lo != 60 {
		t.Errorf("tail back at the bottom after 10 more lines: offset %d, want 60", lo)
	}
}

func TestScrollKeys(t *testing.T) {
	k := keys.Default()
	s := Scroll{}
	press := func(code rune, text string) bool {
		return s.Update(tea.KeyPressMsg{Code: code, Text: text}, k, 100, 10)
	}
	for _, c := range []struct {
		code    rune
		text    string
		handled bool
		want    int
	}{
		{'j', "j", true, 1}, {tea.KeyDown, "", true, 2}, {'k', "k", true, 1}, {'G', "G", true, 90},
		{'g', "g", true, 0}, {tea.KeyEnd, "", true, 90}, {'x', "x", false, 90},
	} {
		if got := press(c.code, c.text); got != c.handled {
			t.Errorf("Update(%q) handled = %v, want %v", c.text, got, c.handled)
		}
		if got := s.Offset(100, 10); got != c.want {
			t.Errorf("after %q offset = %d, want %d", c.text, got, c.want)
		}
	}
}

package style

import (
	"fmt"
	"testing"
)

func TestLine(t *testing.T) {
	cases := []struct {
		x0, y0, x1, y1 int
		want           string
	}{
		{0, 0, 0, 0, "(0,0)"},
		{0, 0, 3, 0, "(0,0) (1,0) (2,0) (3,0)"},
		{3, 0, 0, 0, "(3,0) (2,0) (1,0) (0,0)"},
		{0, 0, 2, 2, "(0,0) (1,1) (2,2)"},
		{0, 3, 1, 0, "(0,3) (0,2) (1,1) (1,0)"},
		{0, 0, 4, 1, "(0,0) (1,0) (2,1) (3,1) (4,1)"},
	}
	for _, c := range cases {
		got := ""
		Line(c.x0, c.y0, c.x1, c.y1, func(x, y int) {
			if got != "" {
				got += " "
			}
			got += fmt.Sprintf("(%d,%d)", x, y)
		})
		if got != c.want {
			t.Errorf("Line(%d,%d → %d,%d) = %s, want %s", c.x0, c.y0, c.x1, c.y1, got, c.want)
		}
	}
}

func TestBrailleBit(t *testing.T) {
	// Every dot of a cell has its own bit, and the eight make U+28FF.
	var all uint8
	for x := range 2 {
		for y := range 4 {
			b := BrailleBit(x+2, y+4) // any cell: only x%2, y%4 matter
			if all&b != 0 {
				t.Errorf("dot (%d,%d) shares bit %#x", x, y, b)
			}
			all |= b
		}
	}
	if r := rune(0x2800 + int(all)); r != '⣿' {
		t.Errorf("all dots = %q, want ⣿", r)
	}
}

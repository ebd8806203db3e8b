package style

// Braille cells draw charts at twice the columns and four times the rows
// of the terminal: a cell is U+2800 plus the bits of its dots.

var brailleBits = [2][4]uint8{{0x01, 0x02, 0x04, 0x40}, {0x08, 0x10, 0x20, 0x80}}

// BrailleBit is the bit of dot (x, y) in its braille cell, the cell being
// (x/2, y/4) of the grid.
func BrailleBit(x, y int) uint8 { return brailleBits[x%2][y%4] }

// Line calls dot for every dot of the Bresenham line from (x0, y0) to
// (x1, y1), both ends included, in order.
func Line(x0, y0, x1, y1 int, dot func(x, y int)) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		dot(x0, y0)
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func sign(x int) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"selmix/internal/safetext"
)

// grid is a table printed with every column as wide as its widest cell
// over the whole table, so a run's id stands over all of its values; a
// row of one cell is a section heading and spans the line.
type grid struct{ rows [][]string }

func (g *grid) row(cells ...string) { g.rows = append(g.rows, cells) }

// maxCell is the widest a run's column gets; longer values (paths, long
// names) lose their middle.
const maxCell = 24

func (g *grid) write(w io.Writer) error {
	var width []int
	for _, r := range g.rows {
		if len(r) < 2 {
			continue
		}
		for i, c := range r {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	// The label column is aligned left, the runs' columns right (numbers
	// line up on their decimal point).
	var b strings.Builder
	for _, r := range g.rows {
		if len(r) < 2 {
			b.WriteString(strings.Join(r, "") + "\n")
			continue
		}
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i == 0 {
				b.WriteString(c + pad)
			} else {
				b.WriteString("  " + pad + c)
			}
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// cell makes an external string fit for a column: printable, and at
// most maxCell runes, the middle elided (safetext.Middle).
func cell(s string) string { return safetext.Middle(s, maxCell) }

func num4(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.4f", v)
}

// Package style is how the workbench looks: the theme (colours reduced to
// escape sequences, heatmap cells), glyph scales (bars, sparklines) and
// cheap text-layout helpers that keep a view inside its box (fit, pad,
// frame, join, overlay).
package style

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// Fit pads or cuts every line of s to exactly w columns and s to exactly
// h lines, so a pane can never spill over its neighbours.
func Fit(s string, w, h int) string {
	if w <= 0 || h <= 0 {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > h {
		lines = lines[:h]
	}
	var b strings.Builder
	b.Grow(len(s) + w*h) // worst case: every line padded
	for i := 0; i < h; i++ {
		if i > 0 {
			b.WriteByte('\n')
		}
		l := ""
		if i < len(lines) {
			l = lines[i]
		}
		b.WriteString(PadRight(l, w))
	}
	return b.String()
}

// Width is the display width of s. Everything the workbench draws itself
// is one column per rune, so that is counted directly (skipping escape
// sequences); a string with other wide-range runes (a CJK class name)
// goes to the full grapheme-aware count.
func Width(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c == 0x1b {
			i = skipEscape(s, i)
			continue
		}
		if c < 0x80 {
			n++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if !narrow(r) {
			return ansi.StringWidth(s)
		}
		n++
		i += size
	}
	return n
}

// narrow reports runes known to take one column: Latin, Greek, general
// punctuation, arrows, maths, box drawing, blocks, shapes, dingbats and
// braille.
func narrow(r rune) bool {
	switch {
	case r > 0xa0 && r < 0x0300 && r != 0xad, r >= 0x0370 && r < 0x0400, r >= 0x2010 && r < 0x2028, r >= 0x2030 && r < 0x205f,
		r >= 0x2190 && r < 0x2300, r >= 0x2500 && r < 0x25fd, r >= 0x2713 && r < 0x2718,
		r >= 0x2800 && r < 0x2900:
		return true
	}
	return false
}

// skipEscape returns the index after the escape sequence at s[i].
func skipEscape(s string, i int) int {
	if i+1 < len(s) && s[i+1] == '[' {
		j := i + 2
		for j < len(s) && !(s[j] >= 0x40 && s[j] <= 0x7e) {
			j++
		}
		return min(j+1, len(s))
	}
	if i+1 < len(s) && s[i+1] == ']' { // OSC, ended by BEL or ST
		j := i + 2
		for j < len(s) && s[j] != 0x07 && !(s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\') {
			j++
		}
		if j < len(s) && s[j] == 0x1b {
			j++
		}
		return min(j+1, len(s))
	}
	return min(i+2, len(s))
}

// PadRight cuts l to w columns or pads it with spaces to w.
func PadRight(l string, w int) string {
	n := Width(l)
	if n > w {
		l = ansi.Truncate(l, w, "…")
		n = Width(l)
	}
	if n < w {
		l += strings.Repeat(" ", w-n)
	}
	return l
}

// PadLeft right-aligns l in w columns (cutting it if longer).
func PadLeft(l string, w int) string {
	n := Width(l)
	if n > w {
		return ansi.Truncate(l, w, "…")
	}
	return strings.Repeat(" ", w-n) + l
}

// Frame draws a box of w×h around body (which Fit cuts to the inside).
// The focused pane's frame is drawn in the focus style.
func Frame(th *Theme, title, body string, w, h int, focused bool) string {
	if w < 4 || h < 2 {
		return Fit("", w, h)
	}
	border := th.Border
	if focused {
		border = th.FocusBorder
	}
	inner := Fit(body, w-2, h-2)
	side := border.Render("│")
	var b strings.Builder
	b.Grow(len(inner) + h*(2*len(side)+1) + 2*(w*3+len(side)))
	t := " " + title + " "
	if focused {
		t = "[" + title + "]"
	}
	t = ansi.Truncate(t, w-4, "…")
	b.WriteString(border.Render("┌─" + t + strings.Repeat("─", max(0, w-3-Width(t))) + "┐"))
	if h > 2 {
		for _, l := range strings.Split(inner, "\n") {
			b.WriteByte('\n')
			b.WriteString(side)
			b.WriteString(l)
			b.WriteString(side)
		}
	}
	b.WriteByte('\n')
	b.WriteString(border.Render("└" + strings.Repeat("─", w-2) + "┘"))
	return b.String()
}

// JoinH places blocks of equal height side by side.
func JoinH(blocks ...string) string {
	split := make([][]string, len(blocks))
	n, size := 0, 0
	for i, bl := range blocks {
		split[i] = strings.Split(bl, "\n")
		n = max(n, len(split[i]))
		size += len(bl)
	}
	var b strings.Builder
	b.Grow(size + n)
	for r := 0; r < n; r++ {
		if r > 0 {
			b.WriteByte('\n')
		}
		for _, ls := range split {
			if r < len(ls) {
				b.WriteString(ls[r])
			}
		}
	}
	return b.String()
}

// Overlay draws box centred over base (both w columns wide); base lines
// under the box are cut around it, so styles on either side survive.
func Overlay(base, box string, w int) string {
	bl := strings.Split(base, "\n")
	xl := strings.Split(box, "\n")
	bw := 0
	for _, l := range xl {
		bw = max(bw, Width(l))
	}
	bw = min(bw, w)
	y0 := max(0, (len(bl)-len(xl))/2)
	x0 := max(0, (w-bw)/2)
	for i, l := range xl {
		y := y0 + i
		if y >= len(bl) {
			break
		}
		left := ansi.Cut(bl[y], 0, x0)
		right := ansi.Cut(bl[y], x0+bw, w)
		bl[y] = PadRight(left, x0) + PadRight(l, bw) + right
	}
	return strings.Join(bl, "\n")
}

// Trimmed formats x with at most three decimals and no trailing zeros
// (0.95, 10, 12.5).
func Trimmed(x float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", x), "0"), ".")
}

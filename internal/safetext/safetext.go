// Package safetext is the one place selmix makes a string it did not write
// itself (a class name from a worker or a features file, a run name, a
// worker's line, a string from a run directory someone else may own) safe
// to show: in the workbench, in text output, as a file name.
package safetext

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// Replacement stands for each control character a string held.
const Replacement = '\uFFFD'

// IsControl reports whether r is a control character as selmix counts
// them: C0, DEL and C1 (unicode.IsControl), and the invisible format
// characters that make a terminal show other text than a string holds —
// the bidirectional embeddings, overrides, isolates and marks (U+202A–
// U+202E, U+2066–U+2069, U+200E, U+200F, U+061C) and the zero-width
// characters (U+200B–U+200D, U+2060, U+FEFF).
func IsControl(r rune) bool {
	switch {
	case unicode.IsControl(r):
		return true
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069, r >= 0x200B && r <= 0x200F:
		return true
	case r == 0x061C, r == 0x2060, r == 0xFEFF:
		return true
	}
	return false
}

// Line makes s safe to print in one row of a terminal: invalid UTF-8 and
// every control character left once escape sequences are removed (a
// newline, carriage return, tab, a lone ESC, C1 controls, bidirectional
// and zero-width characters: IsControl) become U+FFFD, so no byte of s
// can move the cursor, change colours, reorder what is shown or split a
// row, and what was there stays visible.
func Line(s string) string {
	if clean(s) {
		return s // the common case: no copy
	}
	s = ansi.Strip(strings.ToValidUTF8(s, string(Replacement)))
	return strings.Map(func(r rune) rune {
		if IsControl(r) {
			return Replacement
		}
		return r
	}, s)
}

// Console makes a line a program wrote (a worker's stderr) safe to draw
// in one row: what a
// terminal would show after the last carriage return (progress bars
// redraw with \r), without escape sequences or control characters, tabs
// expanded to 8 columns, valid UTF-8, at most max bytes (then "…").
func Console(s string, max int) string {
	if i := strings.LastIndexByte(strings.TrimRight(s, "\r"), '\r'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 4*max {
		s = s[:4*max] // escape sequences are stripped below; bound the work first
	}
	s = ansi.Strip(strings.ToValidUTF8(s, "\uFFFD"))
	var b strings.Builder
	col := 0
	for _, c := range s {
		if b.Len() >= max {
			b.WriteString("…")
			break
		}
		switch {
		case c == '\t':
			n := 8 - col%8
			b.WriteString(strings.Repeat(" ", n))
			col += n
			continue
		case IsControl(c):
			continue
		}
		b.WriteRune(c)
		col++
	}
	return b.String()
}

// clean reports whether s is valid UTF-8 without control characters.
func clean(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c >= 0x80 {
			return utf8.ValidString(s[i:]) && Control(s[i:]) < 0
		}
	}
	return true
}

// Control returns the byte index of the first control character in s
// (C0, DEL, C1, bidirectional and zero-width: IsControl), or -1: what a
// name a person gives must not hold.
func Control(s string) int { return strings.IndexFunc(s, IsControl) }

// FileName makes s usable as a file name on any system: every rune other
// than an ASCII letter, digit, '-', '_' or '.' becomes one '_'.
func FileName(s string) string {
	b := []rune(s)
	for i, r := range b {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			b[i] = '_'
		}
	}
	return string(b)
}

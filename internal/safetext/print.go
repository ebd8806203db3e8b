package safetext

import (
	"fmt"
	"io"
)

// Fprintf is fmt.Fprintf for text output holding strings selmix did not
// write (names, paths, a run directory's contents): each string argument
// is made safe to print in one cell of a row (Line) first.
func Fprintf(w io.Writer, format string, args ...any) {
	for i, a := range args {
		switch v := a.(type) {
		case string:
			args[i] = Line(v)
		case error:
			args[i] = Line(v.Error())
		case fmt.Stringer: // a control, whose key and value came from a client
			args[i] = Line(v.String())
		}
	}
	fmt.Fprintf(w, format, args...)
}

// Cut makes s safe to print in one row (Line), at most limit runes
// (0: no limit) with "…" when cut.
func Cut(s string, limit int) string {
	s = Line(s)
	if r := []rune(s); limit > 0 && len(r) > limit {
		return string(r[:limit]) + "…"
	}
	return s
}

// Middle makes s safe to print in one row (Line), at most limit runes,
// its middle elided with "…" when longer: for paths and long names, whose
// two ends say the most.
func Middle(s string, limit int) string {
	s = Line(s)
	r := []rune(s)
	if len(r) <= limit {
		return s
	}
	h := (limit - 1) / 2
	return string(r[:h]) + "…" + string(r[len(r)-(limit-1-h):])
}

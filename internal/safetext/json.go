package safetext

import (
	"fmt"
	"unicode/utf8"
)

// JSON escapes in JSON text b what encoding/json leaves raw and a
// terminal may act on: DEL, the C1 controls (U+0080–U+009F; U+009B is a
// CSI to some terminals) and the bidirectional and zero-width characters
// IsControl counts (U+202E would show the rest of a line reversed),
// written as \u007f, \u009b, \u202e …. encoding/json already escapes C0
// controls. The result is the same JSON value: outside strings JSON text
// is ASCII without DEL, so every such character is in one.
func JSON(b []byte) []byte {
	var out []byte
	for i := 0; i < len(b); {
		c := b[i]
		r, n := rune(c), 1
		if c >= utf8.RuneSelf {
			r, n = utf8.DecodeRune(b[i:])
		}
		if r == utf8.RuneError || !IsControl(r) || r < 0x20 {
			// not UTF-8, not a control, or a C0 control encoding/json
			// escaped (one raw would not be JSON)
			if out != nil {
				out = append(out, b[i:i+n]...)
			}
			i += n
			continue
		}
		if out == nil {
			out = append(make([]byte, 0, len(b)+16), b[:i]...)
		}
		out = fmt.Appendf(out, `\u%04x`, r)
		i += n
	}
	if out == nil {
		return b
	}
	return out
}

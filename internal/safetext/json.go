package safetext

import "fmt"

// JSON escapes in JSON text b what encoding/json leaves raw and a
// terminal may act on: DEL and the C1 controls (U+0080–U+009F; U+009B is
// a CSI to some terminals), written as \u007f … \u009f. encoding/json
// already escapes C0 controls. The result is the same JSON value: outside
// strings JSON text is ASCII without DEL, so every such byte is in one.
func JSON(b []byte) []byte {
	var out []byte
	for i := 0; i < len(b); i++ {
		c := b[i]
		var r int
		switch {
		case c == 0x7f:
			r = 0x7f
		case c == 0xc2 && i+1 < len(b) && b[i+1] >= 0x80 && b[i+1] <= 0x9f:
			r = int(b[i+1])
		default:
			if out != nil {
				out = append(out, c)
			}
			continue
		}
		if out == nil {
			out = append(make([]byte, 0, len(b)+16), b[:i]...)
		}
		out = fmt.Appendf(out, `\u%04x`, r)
		if c == 0xc2 {
			i++
		}
	}
	if out == nil {
		return b
	}
	return out
}

package safetext

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// JSON escapes DEL and the C1 controls encoding/json leaves raw (a run
// named "x\u009b31m" printed a CSI by runs ls --json) and keeps the value.
func TestJSON(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain é猫", `"plain é猫"`},
		{"csi \u009b31m", `"csi \u009b31m"`},
		{"nel \u0085 pad \u0080", `"nel \u0085 pad \u0080"`},
		{"del\x7f", `"del\u007f"`},
		{"esc \x1b]0;X\x07", `"esc \u001b]0;X\u0007"`}, // encoding/json's own
		{"\u00a0 nbsp stays", "\"\u00a0 nbsp stays\""},
		{"evil\u202etxt.exe", `"evil\u202etxt.exe"`},
		{"\u2066a\u2069 \u200bb\ufeff \u061c\u200f", `"\u2066a\u2069 \u200bb\ufeff \u061c\u200f"`},
	} {
		b, _ := json.Marshal(c.in)
		if got := string(JSON(b)); got != c.want {
			t.Errorf("JSON(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

// A stringer's text (a control a client sent) is made safe too.
func TestFprintfStringer(t *testing.T) {
	var b bytes.Buffer
	Fprintf(&b, "%s %s|%d", stringer("set \x1b]0;KEYPWN\x07=1"), fmt.Errorf("bad \u009b"), 7)
	if got := b.String(); got != "set =1 bad \uFFFD|7" {
		t.Errorf("got %q", got)
	}
}

type stringer string

func (s stringer) String() string { return string(s) }

// FuzzJSON: what JSON returns is the same JSON value, with no control
// (IsControl) left raw.
func FuzzJSON(f *testing.F) {
	f.Add("csi \u009b31m")
	f.Add("del\x7f \x1b")
	f.Add("\xc2")
	f.Add("rlo\u202e \u2066iso\u2069 zw\u200b\ufeff")
	f.Fuzz(func(t *testing.T, s string) {
		b, err := json.Marshal(map[string]string{s: s})
		if err != nil {
			return
		}
		out := JSON(b)
		var a, c map[string]string
		if err := json.Unmarshal(b, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(out, &c); err != nil {
			t.Fatalf("JSON(%s) = %s: %v", b, out, err)
		}
		if fmt.Sprint(a) != fmt.Sprint(c) {
			t.Fatalf("value changed: %q, want %q", c, a)
		}
		if strings.ContainsFunc(string(out), IsControl) || !utf8.Valid(out) {
			t.Fatalf("JSON(%s) = %q holds a control", b, out)
		}
	})
}

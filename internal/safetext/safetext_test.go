package safetext

import (
	"strings"
	"testing"
)

func TestLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"T-shirt/top", "T-shirt/top"},
		{"Ünïcödé 猫", "Ünïcödé 猫"},
		{"\x1b[31mRED", "RED"},
		{"a\nb", "a\uFFFDb"},
		{"a\r\nb\tc", "a\uFFFD\uFFFDb\uFFFDc"},
		{"bell\x07", "bell\uFFFD"},
		{"lone \x1b", "lone "},
		{"\x1b]0;title\x07x", "x"},
		{"c1 \u009b31m", "c1 \uFFFD31m"},
		{"bad \xff utf8", "bad \uFFFD utf8"},
		{"del\x7f", "del\uFFFD"},
		{"evil\u202etxt.exe", "evil\uFFFDtxt.exe"},
		{"\u2066iso\u2069 \u202aemb\u202c \u200e\u200f\u061c", "\uFFFDiso\uFFFD \uFFFDemb\uFFFD \uFFFD\uFFFD\uFFFD"},
		{"zw\u200b\u200c\u200d\u2060\ufeff", "zw\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD"},
		{"\u2028 and \u00ad stay", "\u2028 and \u00ad stay"},
	} {
		if got := Line(c.in); got != c.want {
			t.Errorf("Line(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestControl(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{{"plain", -1}, {"é猫", -1}, {"a\x1b[31mb", 1}, {"ab\nc", 2}, {"x\u0085", 1},
		{"ab\u202e", 2}, {"a\u2066b", 1}, {"a\u200bb", 1}, {"\ufeff", 0}, {"a\u061c", 1}, {"a\u200e", 1}} {
		if got := Control(c.in); got != c.want {
			t.Errorf("Control(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestFileName(t *testing.T) {
	cases := []struct{ in, want string }{
		{"psi:min-recall", "psi_min-recall"},
		{"mean-recall@cov", "mean-recall_cov"},
		{"a_b.c-D9", "a_b.c-D9"}, // '_' is kept
		{"run 1/ψ", "run_1__"},   // one '_' per rune, not per byte
		{"../etc", ".._etc"},     // no path separator survives
		{"", ""},
	}
	for _, c := range cases {
		if got := FileName(c.in); got != c.want {
			t.Errorf("FileName(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func FuzzLine(f *testing.F) {
	for _, s := range []string{"plain", "\x1b[31mRED", "a\nb", "\xff\xfe", "\x1b]8;;http://x\x07link\x1b]8;;\x07", "\u009b1;2H", "a\u202eb\u2066c\u200b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Line(s)
		if i := strings.IndexFunc(got, IsControl); i >= 0 {
			t.Fatalf("Line(%q) = %q keeps a control character at %d", s, got, i)
		}
		if strings.ContainsRune(got, '\x1b') {
			t.Fatalf("Line(%q) = %q keeps ESC", s, got)
		}
		if Line(got) != got {
			t.Fatalf("Line is not idempotent on %q", s)
		}
	})
}

// Console drops what Line escapes, bidirectional and zero-width
// characters included.
func TestConsole(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"50%\r80% done", "80% done"},
		{"a\tb", "a       b"},
		{"\x1b[31mred\x1b[0m \u009b", "red "},
		{"loss\u202e 1.0 \u2066x\u2069\u200b\ufeff", "loss 1.0 x"},
	} {
		if got := Console(c.in, 80); got != c.want {
			t.Errorf("Console(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

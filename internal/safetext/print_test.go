package safetext

import (
	"strings"
	"testing"
)

func TestFprintf(t *testing.T) {
	var b strings.Builder
	Fprintf(&b, "%s|%d|%s\n", "a\x1b[31mred\nb", 7, "ok")
	if got, want := b.String(), "ared\uFFFDb|7|ok\n"; got != want {
		t.Errorf("Fprintf = %q, want %q", got, want)
	}
}

func TestCut(t *testing.T) {
	for _, c := range []struct {
		name, in string
		limit    int
		want     string
	}{
		{"short", "abc", 5, "abc"},
		{"exact", "abcde", 5, "abcde"},
		{"cut", "abcdef", 5, "abcde…"},
		{"no limit", "abcdef", 0, "abcdef"},
		{"runes, not bytes", "ψψψψ", 3, "ψψψ…"},
		{"controls first", "a\tb", 5, "a\uFFFDb"},
	} {
		if got := Cut(c.in, c.limit); got != c.want {
			t.Errorf("%s: Cut(%q, %d) = %q, want %q", c.name, c.in, c.limit, got, c.want)
		}
	}
}

func TestMiddle(t *testing.T) {
	for _, c := range []struct {
		name, in string
		limit    int
		want     string
	}{
		{"short", "abc", 5, "abc"},
		{"exact", "abcde", 5, "abcde"},
		{"odd limit", "abcdefgh", 5, "ab…gh"},
		{"even limit", "abcdefgh", 6, "ab…fgh"},
		{"runes", "ψψψψψψψψ", 5, "ψψ…ψψ"},
		{"controls first", "a\nb", 5, "a\uFFFDb"},
	} {
		if got := Middle(c.in, c.limit); got != c.want {
			t.Errorf("%s: Middle(%q, %d) = %q, want %q", c.name, c.in, c.limit, got, c.want)
		}
	}
}

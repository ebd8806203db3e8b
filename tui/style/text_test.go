package style

import (
	"testing"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

func TestWidthMatchesAnsi(t *testing.T) {
	red := NewPaint(lipgloss.NewStyle().Foreground(lipgloss.Color("#ff0000")).Bold(true))
	cases := []string{
		"", "plain", "λ of min-recall (bars 0–1); history →", "▶ worst ▏▎█·│┃", "⣿⠂⠉ braille",
		red.Render("coloured ✓ ✗"), "G: ····:::: ≤0 masked ░░▒▒▓▓██ …",
		"class 漢字 wide", "emoji 🙂 wide", "\x1b]8;;http://x\x07link\x1b]8;;\x07",
	}
	for _, s := range cases {
		if got, want := Width(s), ansi.StringWidth(s); got != want {
			t.Errorf("Width(%q) = %d, want %d", s, got, want)
		}
	}
}

func FuzzWidth(f *testing.F) {
	for _, s := range []string{"abc", "▶ x", "\x1b[31mred\x1b[m", "漢", "\x1b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// Only for what we draw: valid UTF-8 without control characters
		// other than complete escape sequences is beyond this check, so
		// compare on printable text only.
		for _, r := range s {
			if r < 0x20 || r == 0x7f || r == 0xfffd {
				return
			}
		}
		if got, want := Width(s), ansi.StringWidth(s); got != want {
			t.Errorf("Width(%q) = %d, want %d", s, got, want)
		}
	})
}

func TestFitExact(t *testing.T) {
	cases := []struct {
		name string
		in   string
		w, h int
	}{
		{"pad", "ab\nc", 5, 3},
		{"cut", "abcdefgh\n1\n2\n3", 4, 2},
		{"styled", NewPaint(lipgloss.NewStyle().Bold(true)).Render("bold text here"), 6, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Fit(c.in, c.w, c.h)
			lines := 1
			for _, r := range got {
				if r == '\n' {
					lines++
				}
			}
			if lines != c.h {
				t.Errorf("Fit(%q, %d, %d) has %d lines", c.in, c.w, c.h, lines)
			}
			for _, l := range splitLines(got) {
				if ansi.StringWidth(l) != c.w {
					t.Errorf("Fit(%q, %d, %d) line %q is %d wide", c.in, c.w, c.h, l, ansi.StringWidth(l))
				}
			}
		})
	}
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := range len(s) {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func TestTrimmed(t *testing.T) {
	for _, c := range []struct {
		x    float64
		want string
	}{{0.95, "0.95"}, {10, "10"}, {12.5, "12.5"}, {0.0004, "0"}, {1.23456, "1.235"}, {-2.5, "-2.5"}} {
		if got := Trimmed(c.x); got != c.want {
			t.Errorf("Trimmed(%g) = %q, want %q", c.x, got, c.want)
		}
	}
}

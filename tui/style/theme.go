package style

import (
	"strings"

	"charm.land/lipgloss/v2"
)

// Paint is a style reduced to the escape sequences around its text.
// lipgloss.Style.Render is far too slow to call thousands of times per
// frame; the sequences it emits for a one-line string never change.
type Paint struct{ pre, suf string }

// NewPaint captures s.
func NewPaint(s lipgloss.Style) Paint {
	r := s.Render("X")
	i := strings.Index(r, "X")
	if i < 0 {
		return Paint{}
	}
	return Paint{r[:i], r[i+1:]}
}

// Render paints each line of text (a style must not span lines: panes
// are cut and joined line by line).
func (p Paint) Render(text string) string {
	if p.pre == "" && p.suf == "" {
		return text
	}
	if strings.IndexByte(text, '\n') >= 0 {
		lines := strings.Split(text, "\n")
		for i, l := range lines {
			lines[i] = p.pre + l + p.suf
		}
		return strings.Join(lines, "\n")
	}
	return p.pre + text + p.suf
}

// Theme is the workbench's styles. A plain theme has no colour at all
// (NO_COLOR, golden tests); everything a colour says is also said by a
// glyph, so nothing is lost without it.
type Theme struct {
	Plain bool

	Title, Dim, Bold, Accent, Good, Bad, Warn, Worst Paint
	Border, FocusBorder, Selected                    Paint

	// Pre-rendered heatmap cells (two columns each), built once because a
	// heatmap draws thousands of them per frame.
	GPos, GNeg [HeatLevels]string // G > 0 by level; masked G ≤ 0 by |level|
	PLev       [HeatLevels]string // P > 0 by level
	PZero      string             // P = 0
}

// HeatLevels is the number of magnitude steps in a heatmap scale.
const HeatLevels = 4

// Glyphs of the heatmap scales: shading for positive values, dots for
// masked (non-positive) gains, so NO_COLOR still tells them apart.
var (
	posGlyphs  = [HeatLevels]string{"░░", "▒▒", "▓▓", "██"}
	maskGlyphs = [HeatLevels]string{"··", "··", "::", "::"}
)

// NewTheme returns the colour theme, or the plain one if !color.
func NewTheme(color bool) *Theme {
	t := &Theme{Plain: !color}
	if !color {
		for i := range HeatLevels {
			t.GPos[i], t.GNeg[i], t.PLev[i] = posGlyphs[i], maskGlyphs[i], posGlyphs[i]
		}
		t.PZero = " ·"
		return t
	}
	c := lipgloss.Color
	fg := func(hex string) lipgloss.Style { return lipgloss.NewStyle().Foreground(c(hex)) }
	t.Title = NewPaint(lipgloss.NewStyle().Bold(true))
	t.Dim = NewPaint(fg("8"))
	t.Bold = NewPaint(lipgloss.NewStyle().Bold(true))
	t.Accent = NewPaint(fg("#5fafff").Bold(true))
	t.Good = NewPaint(fg("#5fd75f"))
	t.Bad = NewPaint(fg("#ff5f5f"))
	t.Warn = NewPaint(fg("#ffaf00"))
	t.Worst = NewPaint(fg("#ff5f5f").Bold(true))
	t.Border = NewPaint(fg("8"))
	t.FocusBorder = NewPaint(fg("#5fafff"))
	t.Selected = NewPaint(lipgloss.NewStyle().Reverse(true))
	// Diverging scale: blues for gains that P may sample, reds for
	// masked ones; a sequential orange scale for P.
	blues := []string{"#5f87af", "#5fafd7", "#5fd7ff", "#afffff"}
	reds := []string{"#875f5f", "#af5f5f", "#d75f5f", "#ff5f5f"}
	oranges := []string{"#875f00", "#af8700", "#d7af00", "#ffd700"}
	for i := range HeatLevels {
		t.GPos[i] = NewPaint(fg(blues[i])).Render(posGlyphs[i])
		t.GNeg[i] = NewPaint(fg(reds[i])).Render(maskGlyphs[i])
		t.PLev[i] = NewPaint(fg(oranges[i])).Render(posGlyphs[i])
	}
	t.PZero = t.Dim.Render(" ·")
	return t
}

// Render paints text with p (kept so call sites read th.Render(th.Dim, …)).
func (t *Theme) Render(p Paint, text string) string { return p.Render(text) }

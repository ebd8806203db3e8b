package pane

import (
	"math"
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

// Level maps |v|/scale in (0, 1] to a level 0..HeatLevels-1.
func Level(v, scale float64) int {
	if scale <= 0 {
		return 0
	}
	l := int(math.Ceil(math.Abs(v)/scale*HeatLevels)) - 1
	return max(0, min(HeatLevels-1, l))
}

// SqrtLevel is Level on a square-root scale: one large gain must not
// flatten every other cell to the lowest level.
func SqrtLevel(v, scale float64) int {
	if scale <= 0 {
		return 0
	}
	return Level(math.Sqrt(math.Abs(v)/scale), 1)
}

var eighths = []string{"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"}

// Bar is a horizontal bar of w columns filled to frac ∈ [0, 1] with
// eighth-block resolution; the rest is a light track.
func Bar(frac float64, w int) string {
	if w <= 0 {
		return ""
	}
	if math.IsNaN(frac) {
		frac = 0
	}
	frac = math.Max(0, math.Min(1, frac))
	n := int(math.Round(frac * float64(w) * 8))
	full, part := n/8, n%8
	var b strings.Builder
	b.WriteString(strings.Repeat("█", full))
	rest := w - full
	if part > 0 {
		b.WriteString(eighths[part])
		rest--
	}
	b.WriteString(strings.Repeat("·", max(0, rest)))
	return b.String()
}

// BarMark is Bar with the column holding mark ∈ [0, 1] drawn as "│"
// (a constraint line such as α/K).
func BarMark(frac, mark float64, w int) string {
	r := []rune(Bar(frac, w))
	i := int(math.Round(mark * float64(w)))
	if i >= 0 && i < len(r) {
		if r[i] == '█' {
			r[i] = '┃'
		} else {
			r[i] = '│'
		}
	}
	return string(r)
}

var sparks = []rune("▁▂▃▄▅▆▇█")

// Sparkline draws the last w values of v scaled to their own range.
func Sparkline(v []float64, w int) string {
	if w <= 0 || len(v) == 0 {
		return ""
	}
	if len(v) > w {
		v = v[len(v)-w:]
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range v {
		if !math.IsNaN(x) {
			lo, hi = math.Min(lo, x), math.Max(hi, x)
		}
	}
	out := make([]rune, len(v))
	for i, x := range v {
		switch {
		case math.IsNaN(x):
			out[i] = ' '
		case hi-lo < 1e-12*math.Max(1, math.Abs(hi)):
			out[i] = sparks[len(sparks)/2]
		default:
			out[i] = sparks[int((x-lo)/(hi-lo)*float64(len(sparks)-1)+0.5)]
		}
	}
	return string(out)
}

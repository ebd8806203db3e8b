package style

import (
	"math"
	"strings"
)

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

package curves

import (
	"fmt"
	"math"
	"strings"

	"selmix/tui/runstate"
	"selmix/tui/style"
)

// The linear view: does the first-order step hold? Per refresh interval,
// the change of ψ that G and P predicted for the steps taken against the
// change that happened (docs/method.md), their ratio over the run as bars,
// and how often the realised change had the wrong sign. Everything it
// draws is kept by runstate as refreshes arrive; View formats the visible
// intervals only.

// Ratios beyond these are drawn clipped (the tip marked): one interval
// whose prediction was near 0 must not flatten every other bar.
const (
	ratioTop    = 3.0
	ratioBottom = -3.0
)

func (m *Model) linearView() string {
	r := m.Run
	th := m.Ctx.Theme
	if len(r.Intervals) == 0 {
		return m.Waiting()
	}
	lines := m.linearSummary()
	if r.Predicted == 0 {
		last := r.Intervals[len(r.Intervals)-1]
		lines = append(lines, "", th.Render(th.Dim, "Each refresh compares the change of ψ its G and P predicted for the"),
			th.Render(th.Dim, "steps taken with the change it measured (docs/method.md)."))
		if last.Why == runstate.WhyRecorded {
			lines = append(lines, th.Render(th.Dim, "This run was recorded before refreshes kept those figures."))
		}
		return style.Fit(strings.Join(lines, "\n"), m.W, m.H)
	}
	avail := m.H - len(lines)
	const tableW = 44
	if m.W >= 100 {
		chartW := m.W - tableW - 2
		body := style.JoinH(style.Fit(m.ratioBars(chartW, avail), chartW, avail), style.Fit("", 2, avail),
			style.Fit(m.intervalTable(tableW, avail), tableW, avail))
		return style.Fit(strings.Join(lines, "\n")+"\n"+body, m.W, m.H)
	}
	tableH := min(1+len(r.Intervals), avail/2)
	chartH := avail - tableH
	if chartH < 5 {
		chartH, tableH = avail, 0
	}
	lines = append(lines, m.ratioBars(m.W, chartH))
	if tableH > 0 {
		lines = append(lines, m.intervalTable(m.W, tableH))
	}
	return style.Fit(strings.Join(lines, "\n"), m.W, m.H)
}

// linearSummary is the newest interval and the run's tally, in two lines.
func (m *Model) linearSummary() []string {
	r := m.Run
	th := m.Ctx.Theme
	last := r.Intervals[len(r.Intervals)-1]
	l1 := th.Render(th.Bold, "Δψ "+span(last)) + "  "
	if last.OK {
		l1 += fmt.Sprintf("predicted %s  realised %s  ratio %s", signed(last.Predicted), signed(last.Realised), ratio(last))
		if last.WrongSign() {
			l1 += "  " + th.Render(th.Bad, "✗ wrong sign")
		}
	} else {
		l1 += th.Render(th.Dim, "no prediction: "+last.Why)
		if p, ok := r.LastPredicted(); ok {
			l1 += th.Render(th.Dim, "  (last "+span(p)+": ratio "+ratio(p)+")")
		}
	}
	if r.Predicted == 0 {
		return []string{l1, th.Render(th.Dim, "no interval of this run has a prediction")}
	}
	wrong := fmt.Sprintf("wrong sign %d of %d intervals (%.0f%%)", r.Wrong, r.Predicted, 100*float64(r.Wrong)/float64(r.Predicted))
	if r.Wrong > 0 {
		wrong = th.Render(th.Bad, wrong)
	}
	l2 := wrong + th.Render(th.Dim, "  ·  over the run realised/predicted ")
	if r.SumPredicted != 0 {
		q := math.Round(100*r.SumRealised/r.SumPredicted) / 100
		l2 += fmt.Sprintf("%.2f", q+0) // +0: no "-0.00"
	} else {
		l2 += "—"
	}
	return []string{l1, l2}
}

// span names an interval by the steps of its refreshes.
func span(iv runstate.Interval) string {
	if iv.From < 0 {
		return fmt.Sprintf("at %d", iv.Step)
	}
	return fmt.Sprintf("%d→%d", iv.From, iv.Step)
}

func signed(x float64) string { return fmt.Sprintf("%+.4f", x) }

// ratio formats realised/predicted, "—" where it has none.
func ratio(iv runstate.Interval) string {
	q := iv.Ratio()
	switch {
	case math.IsNaN(q):
		return "—"
	case math.Abs(q) >= 100:
		return fmt.Sprintf("%+.0e", q)
	}
	return fmt.Sprintf("%+.2f", q)
}

// ratioBars draws the ratio of each interval as a bar from 0, the newest
// at the right: up when the change had the predicted sign, down (and
// marked ✗ on the axis) when it had the wrong one; · on the axis marks an
// interval without a prediction. The scale reaches at least 1 (the
// prediction held) and is clipped at ratioTop/ratioBottom.
func (m *Model) ratioBars(w, h int) string {
	r := m.Run
	th := m.Ctx.Theme
	const axisW = 6
	plotW := w - axisW
	rows := h - 2 // title and step line
	if plotW < 4 || rows < 3 {
		return ""
	}
	ivs := r.Intervals
	if len(ivs) > plotW {
		ivs = ivs[len(ivs)-plotW:]
	}
	// A gap between bars while they fit: one column each beyond.
	sep := ""
	if 2*len(ivs) <= plotW {
		sep = " "
	}
	hi, lo := 1.0, 0.0
	for _, iv := range ivs {
		if q := iv.Ratio(); !math.IsNaN(q) {
			hi, lo = max(hi, min(q, ratioTop)), min(lo, max(q, ratioBottom))
		}
	}
	// Rows above the axis for (0, hi], below for [lo, 0): in proportion,
	// at least one below once a ratio is negative.
	neg := 0
	if lo < 0 {
		neg = max(1, int(math.Round(float64(rows-1)*-lo/(hi-lo))))
	}
	pos := rows - 1 - neg
	if pos < 1 {
		return ""
	}
	cells := make([][]string, rows)
	for y := range cells {
		cells[y] = make([]string, len(ivs))
	}
	for x, iv := range ivs {
		q := iv.Ratio()
		for y := range rows {
			cells[y][x] = " "
		}
		switch {
		case math.IsNaN(q):
			cells[pos][x] = th.Render(th.Dim, "·")
		case q >= 0:
			cells[pos][x] = th.Render(th.Dim, "─")
			eighths := int(math.Round(min(q, hi) / hi * float64(pos*8)))
			for y := pos - 1; y >= 0 && eighths > 0; y-- {
				c := string(sparks[min(eighths, 8)-1])
				if q > ratioTop && y == 0 {
					c = "▲"
				}
				cells[y][x] = th.Render(th.Accent, c)
				eighths -= 8
			}
		default:
			cells[pos][x] = th.Render(th.Bad, "✗")
			halves := max(1, int(math.Round(max(q, lo)/lo*float64(neg*2))))
			for y := pos + 1; y < rows && halves > 0; y++ {
				c := "█"
				if halves == 1 {
					c = "▀"
				}
				if q < ratioBottom && y == rows-1 {
					c = "▼"
				}
				cells[y][x] = th.Render(th.Bad, c)
				halves -= 2
			}
		}
	}
	oneRow := pos - int(math.Ceil(math.Round(float64(pos*8)/hi)/8)) // the row the bar of ratio 1 reaches
	lines := []string{th.Render(th.Dim, "ratio realised/predicted per interval  ✗ wrong sign  · none")}
	for y := range rows {
		label := ""
		switch {
		case y == 0:
			label = fmt.Sprintf("%.3g", hi)
		case y == oneRow:
			label = "1"
		case y == pos:
			label = "0"
		case y == rows-1 && neg > 0:
			label = fmt.Sprintf("%.3g", lo)
		}
		gap := sep
		if y == pos && sep != "" {
			gap = th.Render(th.Dim, "─")
		}
		lines = append(lines, th.Render(th.Dim, style.PadLeft(label, axisW-1)+"┤")+strings.Join(cells[y], gap))
	}
	first, last := ivs[0].Step, ivs[len(ivs)-1].Step
	xl := fmt.Sprintf("step %d", first)
	barsW := len(ivs) + len(sep)*(len(ivs)-1)
	lines = append(lines, th.Render(th.Dim, strings.Repeat(" ", axisW)+xl+style.PadLeft(fmt.Sprint(last), max(0, barsW-len(xl)))))
	return strings.Join(lines, "\n")
}

var sparks = []rune("▁▂▃▄▅▆▇█")

// intervalTable lists the newest intervals first: their steps, predicted
// and realised changes and ratio, or why there is no prediction.
func (m *Model) intervalTable(w, h int) string {
	r := m.Run
	th := m.Ctx.Theme
	lines := []string{th.Render(th.Dim, fmt.Sprintf("%-11s %9s %9s %7s", "interval", "predicted", "realised", "ratio"))}
	for i := len(r.Intervals) - 1; i >= 0 && len(lines) < h; i-- {
		iv := r.Intervals[i]
		if !iv.OK {
			lines = append(lines, fmt.Sprintf("%-11s ", span(iv))+th.Render(th.Dim, "no prediction: "+iv.Why))
			continue
		}
		l := fmt.Sprintf("%-11s %9s %9s %7s", span(iv), signed(iv.Predicted), signed(iv.Realised), ratio(iv))
		if iv.WrongSign() {
			l = th.Render(th.Bad, l+" ✗")
		}
		lines = append(lines, l)
	}
	return style.Fit(strings.Join(lines, "\n"), w, h)
}

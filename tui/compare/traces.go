package compare

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"selmix/tui/style"
)

func (m *Model) xName() string {
	if m.byTime {
		return "seconds"
	}
	return "step"
}

func (m *Model) xs(r *Series) []float64 {
	if m.byTime {
		return r.Secs
	}
	return r.Steps
}

func (m *Model) xRange() (float64, float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range m.runs {
		for _, x := range m.xs(r) {
			if !math.IsNaN(x) {
				lo, hi = math.Min(lo, x), math.Max(hi, x)
			}
		}
	}
	if math.IsInf(lo, 0) {
		return 0, 1
	}
	return lo, hi
}

// legendItem names a trace and its last value.
type legendItem struct {
	label string
	last  string
}

// traces builds what the chart draws for plotW columns: a smoothed line
// per run, or per group the mean of its members with a band. Smoothing
// runs on each run's whole series before anything is sampled.
func (m *Model) traces(plotW int) ([]trace, []legendItem) {
	for len(m.ema) < len(m.runs) {
		m.ema = append(m.ema, nil)
	}
	smoothed := make([][]float64, len(m.runs))
	for i, r := range m.runs {
		m.ema[i] = EMA(m.ema[i], r.Series[m.metric], m.smooth)
		smoothed[i] = m.ema[i]
	}
	dw := 2 * max(1, plotW)
	x0, x1 := m.xRange()
	colX := func(c int) float64 {
		if dw == 1 {
			return x0
		}
		return x0 + (x1-x0)*float64(c)/float64(dw-1)
	}
	if m.group == "" {
		traces := make([]trace, len(m.runs))
		legend := make([]legendItem, len(m.runs))
		for i, r := range m.runs {
			traces[i] = trace{label: r.Label(), xs: m.xs(r), ys: smoothed[i]}
			// The last value as measured, the number the sweep view
			// and runs compare show; the chart draws it smoothed.
			legend[i] = legendItem{r.Label(), lastOf(r.Series[m.metric])}
			if r.Live {
				legend[i].label += " (live)"
			}
		}
		if m.envelope && len(m.runs) > 1 {
			samplers := make([]sampler, len(m.runs))
			for i, r := range m.runs {
				samplers[i] = newSampler(m.xs(r), smoothed[i])
			}
			lo, hi := make([]float64, dw), make([]float64, dw)
			for c := range dw {
				lo[c], hi[c] = math.NaN(), math.NaN()
				for _, s := range samplers {
					if v := s.at(colX(c)); !math.IsNaN(v) {
						if math.IsNaN(lo[c]) || v < lo[c] {
							lo[c] = v
						}
						if math.IsNaN(hi[c]) || v > hi[c] {
							hi[c] = v
						}
					}
				}
			}
			// The envelope hangs off the first trace; it is drawn beneath
			// every line.
			traces[0].lo, traces[0].hi = lo, hi
		}
		return traces, legend
	}
	groups := m.Groups()
	traces := make([]trace, len(groups))
	legend := make([]legendItem, len(groups))
	for gi, g := range groups {
		samplers := make([]sampler, len(g.Members))
		for j, i := range g.Members {
			samplers[j] = newSampler(m.xs(m.runs[i]), smoothed[i])
		}
		xs, mean := make([]float64, dw), make([]float64, dw)
		lo, hi := make([]float64, dw), make([]float64, dw)
		vals := make([]float64, 0, len(samplers))
		for c := range dw {
			x := colX(c)
			vals = vals[:0]
			for _, s := range samplers {
				if v := s.at(x); !math.IsNaN(v) {
					vals = append(vals, v)
				}
			}
			xs[c] = x
			mu, sd := meanStd(vals)
			mean[c] = mu
			if m.envelope && len(vals) > 0 {
				lo[c], hi[c] = slices.Min(vals), slices.Max(vals)
			} else {
				lo[c], hi[c] = mu-sd, mu+sd
			}
		}
		traces[gi] = trace{label: g.Value, xs: xs, ys: mean, lo: lo, hi: hi}
		legend[gi] = legendItem{fmt.Sprintf("%s=%s (%d)", m.group, g.Value, len(g.Members)), g.lastMeanStd(samplers, x1)}
	}
	return traces, legend
}

// legend lays the items out in as few lines of w columns as they take.
func (m *Model) legend(items []legendItem, w int) []string {
	var lines []string
	// The legend says which number it shows: a run's last as measured,
	// a group's last smoothed mean.
	cur := m.ctx.Theme.Render(m.ctx.Theme.Dim, "last (raw):")
	if m.group != "" {
		cur = m.ctx.Theme.Render(m.ctx.Theme.Dim, fmt.Sprintf("last (EMA %.2f):", m.smooth))
	}
	for i, it := range items {
		cell := m.paints[i%len(m.paints)].Render(Mark(i)) + " " + it.label + " " + it.last
		cw := style.Width(cell)
		if cur != "" && style.Width(cur)+3+cw > w {
			lines = append(lines, cur)
			cur = ""
		}
		if cur != "" {
			cur += "   "
		}
		cur += cell
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}

// slider draws v in [0, 1) as a bar of w cells.
func slider(v float64, w int) string {
	n := int(math.Round(v / 0.95 * float64(w)))
	return "[" + strings.Repeat("■", n) + strings.Repeat("·", w-n) + "]"
}

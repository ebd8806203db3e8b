// Package compare is the comparison view of several runs: their
// validation curves overlaid (ψ of any objective, mean and worst recall,
// coverage, s, Δψ predicted and realised) by step or wall time, smoothed
// by an EMA of the full-resolution series, with a min/max envelope, a
// log scale, and grouping by any config key (one line per group: the
// mean over its members and a ± std band); and the runs' per-class
// recall side by side, sorted by the difference. It is a whole Bubble
// Tea program's model; live runs are read again every second off the UI
// goroutine.
package compare

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"selmix/tui/pane"
	"selmix/tui/style"
)

// DataMsg carries runs read from disk: all of them, or (Partial) fresh
// reads of some, which replace the runs of the same id.
type DataMsg struct {
	Runs    []*RunSeries
	Partial bool
	Err     error
}

// Loader reads runs by id; it runs off the UI goroutine.
type Loader func(ids []string) ([]*RunSeries, error)

// pollEvery is how often live runs are read again.
const pollEvery = time.Second

// Model is the comparison view.
type Model struct {
	ctx    *pane.Context
	ids    []string
	load   Loader
	runs   []*RunSeries
	err    error
	paints []style.Paint

	metric   int
	picked   bool // the user chose the metric (else it follows the first run's objective)
	byTime   bool
	smooth   float64
	envelope bool
	logY     bool
	group    string // config key the runs are grouped by; "" for none
	recall   bool   // the per-class recall table instead of the curves
	w, h     int

	ema [][]float64 // smoothing buffers, one per run
}

// New returns the comparison of runs ids, read with load (nil: the runs
// arrive as DataMsg from elsewhere, as in tests).
func New(ctx *pane.Context, ids []string, load Loader) *Model {
	m := &Model{ctx: ctx, ids: slices.Clone(ids), load: load, smooth: 0.6, w: 80, h: 24}
	for _, c := range palette {
		if ctx.Theme.Plain {
			m.paints = append(m.paints, style.Paint{})
		} else {
			m.paints = append(m.paints, style.NewPaint(lipgloss.NewStyle().Foreground(lipgloss.Color(c))))
		}
	}
	return m
}

// SetSize sets the screen size.
func (m *Model) SetSize(w, h int) { m.w, m.h = w, h }

// Runs are the runs compared, in the order given.
func (m *Model) Runs() []*RunSeries { return m.runs }

func (m *Model) Init() tea.Cmd {
	if m.load == nil {
		return nil
	}
	return m.read(m.ids, false)
}

func (m *Model) read(ids []string, partial bool) tea.Cmd {
	load, ids := m.load, slices.Clone(ids)
	return func() tea.Msg {
		rs, err := load(ids)
		return DataMsg{Runs: rs, Partial: partial, Err: err}
	}
}

func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.SetSize(msg.Width, msg.Height)
	case DataMsg:
		return m, m.data(msg)
	case tea.KeyPressMsg:
		return m, m.key(msg)
	}
	return m, nil
}

func (m *Model) data(msg DataMsg) tea.Cmd {
	if msg.Err != nil {
		m.err = msg.Err
	} else {
		m.err = nil
		if msg.Partial {
			for _, fresh := range msg.Runs {
				for i, r := range m.runs {
					if r.ID == fresh.ID {
						m.runs[i] = fresh
					}
				}
			}
		} else {
			m.runs = msg.Runs
		}
		if !m.picked && len(m.runs) > 0 {
			// First the ψ the first run optimizes.
			for i, mt := range metrics {
				if mt.Name == "ψ "+m.runs[0].Objective {
					m.metric = i
				}
			}
		}
	}
	var live []string
	for _, r := range m.runs {
		if r.Live {
			live = append(live, r.ID)
		}
	}
	if m.load == nil || (len(live) == 0 && msg.Err == nil) {
		return nil
	}
	if msg.Err != nil && len(m.runs) == 0 {
		return nil // nothing was read: nothing to follow
	}
	if len(live) == 0 {
		return nil
	}
	load := m.load
	return tea.Tick(pollEvery, func(time.Time) tea.Msg {
		rs, err := load(live)
		return DataMsg{Runs: rs, Partial: true, Err: err}
	})
}

// Keys of the comparison beyond the workbench's map.
var (
	keyTime     = key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "step/time"))
	keyEnvelope = key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "envelope"))
	keyLog      = key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "log scale"))
	keyGroup    = key.NewBinding(key.WithKeys("g"), key.WithHelp("g", "group by"))
	keyRecall   = key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "per-class recall"))
)

func (m *Model) key(kp tea.KeyPressMsg) tea.Cmd {
	k := m.ctx.Keys
	n := len(metrics)
	switch {
	case key.Matches(kp, k.Quit), key.Matches(kp, k.Cancel):
		return tea.Quit
	case key.Matches(kp, k.Up):
		m.metric, m.picked = (m.metric+n-1)%n, true
	case key.Matches(kp, k.Down):
		m.metric, m.picked = (m.metric+1)%n, true
	case key.Matches(kp, k.SmoothMore):
		m.smooth = math.Min(0.95, math.Round((m.smooth+0.05)*100)/100)
	case key.Matches(kp, k.SmoothLess):
		m.smooth = math.Max(0, math.Round((m.smooth-0.05)*100)/100)
	case key.Matches(kp, keyTime):
		m.byTime = !m.byTime
	case key.Matches(kp, keyEnvelope):
		m.envelope = !m.envelope
	case key.Matches(kp, keyLog):
		m.logY = !m.logY
	case key.Matches(kp, keyGroup):
		m.nextGroup()
	case key.Matches(kp, keyRecall):
		m.recall = !m.recall
	}
	return nil
}

// GroupKeys are the config keys whose values differ between the runs:
// the keys worth grouping by.
func (m *Model) GroupKeys() []string {
	seen := map[string]bool{}
	for _, r := range m.runs {
		for k := range r.Config {
			seen[k] = true
		}
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(seen)) {
		if k == "name" || k == "id" {
			continue
		}
		for _, r := range m.runs[1:] {
			if r.Config[k] != m.runs[0].Config[k] {
				out = append(out, k)
				break
			}
		}
	}
	return out
}

// nextGroup cycles the grouping: none, then each key that differs.
func (m *Model) nextGroup() {
	ks := m.GroupKeys()
	if len(ks) == 0 {
		m.group = ""
		return
	}
	i := slices.Index(ks, m.group)
	switch {
	case m.group == "":
		m.group = ks[0]
	case i < 0 || i == len(ks)-1:
		m.group = ""
	default:
		m.group = ks[i+1]
	}
}

// GroupBy sets the grouping key ("" for none).
func (m *Model) GroupBy(k string) { m.group = k }

func (m *Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	v.WindowTitle = "selmix compare"
	return v
}

// Render is the screen as text, exactly w×h.
func (m *Model) Render() string {
	th := m.ctx.Theme
	head := th.Render(th.Title, "selmix compare") + fmt.Sprintf("  %d runs", len(m.ids))
	status := ""
	if m.err != nil {
		status = th.Render(th.Bad, "error: "+sanitize(m.err.Error()))
	}
	if m.runs == nil {
		body := th.Render(th.Dim, "reading the runs…")
		if m.err != nil {
			body = th.Render(th.Dim, "the runs could not be read")
		}
		frame := style.Frame(th, "compare", body, m.w, m.h-3, true)
		return style.Fit(strings.Join([]string{head, frame, status, m.help()}, "\n"), m.w, m.h)
	}
	if m.recall {
		frame := style.Frame(th, "per-class recall at the last refresh", m.recallTable(m.w-2, m.h-5), m.w, m.h-3, true)
		return style.Fit(strings.Join([]string{head, frame, status, m.help()}, "\n"), m.w, m.h)
	}
	traces, legend := m.traces(m.w - 2 - 8)
	settings := fmt.Sprintf("%s · x %s · EMA %.2f %s", metrics[m.metric].Name, m.xName(), m.smooth, slider(m.smooth, 10))
	if m.logY {
		settings += " · log"
	}
	if m.envelope {
		settings += " · min/max"
	}
	if m.group != "" {
		band := "± std"
		if m.envelope {
			band = "min/max"
		}
		settings += " · by " + m.group + " (mean " + band + ")"
	}
	head += "  " + th.Render(th.Dim, settings)
	legendLines := m.legend(legend, m.w-2)
	maxLegend := max(1, (m.h-6)/3)
	if len(legendLines) > maxLegend {
		more := len(legendLines) - maxLegend + 1
		legendLines = append(legendLines[:maxLegend-1], th.Render(th.Dim, fmt.Sprintf("… %d more lines of legend", more)))
	}
	chartH := m.h - 5 - len(legendLines)
	x0, x1 := m.xRange()
	body := chart(th, m.paints, traces, x0, x1, m.logY, m.xName(), m.w-2, chartH)
	body += "\n" + strings.Join(legendLines, "\n")
	frame := style.Frame(th, metrics[m.metric].Name, body, m.w, m.h-3, true)
	return style.Fit(strings.Join([]string{head, frame, status, m.help()}, "\n"), m.w, m.h)
}

func (m *Model) help() string {
	k := m.ctx.Keys
	var parts []string
	if m.recall {
		parts = []string{"r curves", k.Quit.Help().Key + "/esc back"}
	} else {
		parts = []string{"↑/↓ series", "[/] smoothing", "x step/time", "e envelope", "y log", "g group", "r per-class", k.Quit.Help().Key + "/esc back"}
	}
	return m.ctx.Theme.Render(m.ctx.Theme.Dim, strings.Join(parts, "  "))
}

func (m *Model) xName() string {
	if m.byTime {
		return "seconds"
	}
	return "step"
}

func (m *Model) xs(r *RunSeries) []float64 {
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
			legend[i] = legendItem{r.Label(), lastOf(smoothed[i])}
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

// Group is the runs that share a value of the grouping key.
type Group struct {
	Value   string
	Members []int // indices into the runs
}

// Groups splits the runs by the grouping key, in order of first member.
func (m *Model) Groups() []Group {
	var out []Group
	at := map[string]int{}
	for i, r := range m.runs {
		v, ok := r.Config[m.group]
		if !ok {
			v = "(unset)"
		}
		j, ok := at[v]
		if !ok {
			j = len(out)
			at[v] = j
			out = append(out, Group{Value: v})
		}
		out[j].Members = append(out[j].Members, i)
	}
	return out
}

// lastMeanStd is the group's mean ± std at the end of its members' last
// refreshes (each member's last smoothed value).
func (g Group) lastMeanStd(ss []sampler, _ float64) string {
	var vals []float64
	for _, s := range ss {
		if n := len(s.ys); n > 0 {
			vals = append(vals, s.ys[n-1])
		}
	}
	if len(vals) == 0 {
		return "-"
	}
	mu, sd := meanStd(vals)
	return fmt.Sprintf("%s ± %s", num(mu), num(sd))
}

// meanStd is the mean and the sample standard deviation (0 for one
// value, NaN for none).
func meanStd(v []float64) (float64, float64) {
	if len(v) == 0 {
		return math.NaN(), math.NaN()
	}
	mu := 0.0
	for _, x := range v {
		mu += x
	}
	mu /= float64(len(v))
	if len(v) == 1 {
		return mu, 0
	}
	ss := 0.0
	for _, x := range v {
		ss += (x - mu) * (x - mu)
	}
	return mu, math.Sqrt(ss / float64(len(v)-1))
}

func lastOf(v []float64) string {
	for i := len(v) - 1; i >= 0; i-- {
		if !math.IsNaN(v[i]) {
			return num(v[i])
		}
	}
	return "-"
}

// legend lays the items out in as few lines of w columns as they take.
func (m *Model) legend(items []legendItem, w int) []string {
	var lines []string
	cur := ""
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

// sanitize makes an error fit for the terminal.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '?'
		}
		return r
	}, s)
}

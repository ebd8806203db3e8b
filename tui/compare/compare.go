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
	Runs    []*Series
	Partial bool
	Err     error
}

// Loader reads runs by id; it runs off the UI goroutine.
type Loader func(ids []string) ([]*Series, error)

// pollEvery is how often live runs are read again.
const pollEvery = time.Second

// Model is the comparison view.
type Model struct {
	ctx    *pane.Context
	ids    []string
	load   Loader
	runs   []*Series
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
func (m *Model) Runs() []*Series { return m.runs }

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
				if mt.s.Objective != "" && string(mt.s.Objective) == m.runs[0].Objective {
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
	if keys := dataDiffers(m.runs); len(keys) > 0 && status == "" {
		status = th.Render(th.Warn, "! runs of different experiments: "+strings.Join(keys, ", ")+" differ")
	}
	traces, legend := m.traces(m.w - 2 - 8)
	x0, x1 := m.xRange()
	sc := linear
	settings := fmt.Sprintf("%s · x %s · EMA %.2f %s", metrics[m.metric].Name, m.xName(), m.smooth, slider(m.smooth, 10))
	if m.logY {
		sc = logScale(traces, x0, x1)
		settings += " · " + sc.name
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
	body := chart(th, m.paints, traces, x0, x1, sc, m.xName(), m.w-2, chartH)
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

// sanitize makes an error fit for the terminal.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '?'
		}
		return r
	}, s)
}

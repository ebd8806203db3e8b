// Package eventlog is the event-log pane: controls and their acks,
// refreshes, warnings, errors and the worker's lines, newest at the
// bottom. It follows the tail unless the user scrolls up. A key filters
// it to the worker's console: its stderr as written, under the figures
// the trainer reports of its device and process.
package eventlog

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"selmix/tui/pane"
	"selmix/tui/runstate"
	"selmix/tui/style"
	"selmix/tui/system"
)

// view is one of the pane's two lists with its own scroll position.
type view struct {
	scroll pane.Scroll // follows the tail until scrolled up
	// base is how many entries the history had dropped when the offset
	// was last set: a window left in place moves up as old entries go.
	base int
}

// Model is the pane.
type Model struct {
	pane.Base
	console bool    // the worker's lines only
	views   [2]view // events, console
}

// New returns the pane over run.
func New(ctx *pane.Context, run *runstate.State) *Model {
	return &Model{Base: pane.NewBase(ctx, run), views: [2]view{{scroll: pane.NewTail()}, {scroll: pane.NewTail()}}}
}

// Console reports whether the pane shows the worker's lines only.
func (m *Model) Console() bool { return m.console }

// entries is the list shown and how many of its entries the history has
// dropped so far.
func (m *Model) entries() ([]runstate.Entry, int, *view) {
	if m.console {
		return m.Run.Console, m.Run.ConsoleDropped, &m.views[1]
	}
	return m.Run.Log, m.Run.LogDropped, &m.views[0]
}

// rows is the height of the list: the console gives its top lines to
// the system figures.
func (m *Model) rows() int {
	if m.console {
		return max(0, m.H-m.systemRows())
	}
	return m.H
}

// window is the visible entries [lo, hi).
func (m *Model) window() (lo, hi int) {
	log, dropped, v := m.entries()
	n, rows := len(log), m.rows()
	lo, hi = v.scroll.Window(n, rows)
	if shift := dropped - v.base; shift > 0 && v.scroll.Fixed() {
		lo = max(0, lo-shift)
		hi = min(n, lo+rows)
	}
	return lo, hi
}

func (m *Model) Title() string {
	name := "events"
	if m.console {
		name = "worker console"
	}
	log, _, _ := m.entries()
	n := len(log)
	if _, hi := m.window(); hi < n {
		return fmt.Sprintf("%s (%d newer below, %s to follow)", name, n-hi, m.Ctx.Keys.Bottom.Help().Key)
	}
	return name
}
func (m *Model) ShortHelp() []key.Binding {
	k := m.Ctx.Keys
	return []key.Binding{k.Up, k.Down, k.Bottom, k.Console}
}
func (m *Model) FullHelp() [][]key.Binding {
	k := m.Ctx.Keys
	return [][]key.Binding{{k.Up, k.Down, k.Top, k.Bottom, k.Console}}
}

func (m *Model) Update(msg tea.Msg) tea.Cmd {
	kp, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return nil
	}
	if key.Matches(kp, m.Ctx.Keys.Console) {
		m.console = !m.console
		return nil
	}
	log, dropped, v := m.entries()
	// Scroll from where the window is now, entries dropped included.
	if lo, _ := m.window(); v.scroll.Fixed() {
		v.scroll.SetOffset(lo, len(log), m.rows())
	}
	v.base = dropped
	v.scroll.Update(kp, m.Ctx.Keys, len(log), m.rows())
	return nil
}

func (m *Model) View() string {
	th := m.Ctx.Theme
	log, _, _ := m.entries()
	var b strings.Builder
	if m.console {
		b.WriteString(m.system())
	}
	if len(log) == 0 {
		empty := "no events yet"
		switch {
		case m.console && m.Run.Info.Worker != "":
			empty = "no lines from the worker yet: its stderr shows here"
		case m.console:
			empty = "the in-process trainer writes no lines; a worker's stderr (worker.command) shows here"
		}
		b.WriteString(th.Render(th.Dim, empty))
		return style.Fit(b.String(), m.W, m.H)
	}
	lo, hi := m.window()
	var lines []string
	for _, e := range log[lo:hi] {
		st := th.Dim
		switch {
		case m.console:
			st = style.Paint{} // the worker's own text, unstyled
		case e.Level == runstate.Note:
			st = th.Bold
		case e.Level == runstate.Warn:
			st = th.Warn
		case e.Level == runstate.Error:
			st = th.Bad
		}
		text := []string{e.Text}
		if !m.console && e.Level != runstate.Routine && m.W > stepWidth+20 && style.Width(e.Text) > m.W-stepWidth {
			// A result a researcher reports (a run's end, the best
			// checkpoint's test) is read whole: wrapped, not cut.
			text = strings.Split(ansi.Wrap(e.Text, m.W-stepWidth, " "), "\n")
		}
		for i, t := range text {
			head := fmt.Sprintf("%6d  ", e.Step)
			if i > 0 {
				head, t = strings.Repeat(" ", stepWidth), strings.TrimLeft(t, " ")
			}
			lines = append(lines, th.Render(th.Dim, head)+th.Render(st, t))
		}
	}
	rows := m.rows()
	if len(lines) > rows {
		// Wrapped entries took more lines than there are: a pane that
		// follows the log keeps the newest, one scrolled keeps the first.
		if _, _, v := m.entries(); v.scroll.Fixed() {
			lines = lines[:rows]
		} else {
			lines = lines[len(lines)-rows:]
		}
	}
	b.WriteString(strings.Join(lines, "\n"))
	return style.Fit(b.String(), m.W, m.H)
}

// stepWidth is the width of an entry's step column.
const stepWidth = 8

// systemRows is how many lines the console's system figures take.
func (m *Model) systemRows() int {
	switch {
	case m.Run.System == nil || m.H < 4:
		return 0
	case len(m.Run.SystemHistory) >= 2 && m.H >= 8:
		return 2
	}
	return 1
}

// system is the console's head: what the trainer last reported of its
// device and process and, with two reports or more, sparklines of each
// figure over the refreshes (newest at the right).
func (m *Model) system() string {
	th := m.Ctx.Theme
	n := m.systemRows()
	if n == 0 {
		return ""
	}
	out := th.Render(th.Bold, "trainer ") + system.Line(m.Run.System, m.W-8)
	if n == 2 {
		const w = 16
		hist := m.Run.SystemHistory
		if len(hist) > w {
			hist = hist[len(hist)-w:]
		}
		var parts []string
		for _, f := range []struct {
			name string
			get  func(int) float64
		}{
			{"util", func(i int) float64 { return hist[i].Util }},
			{"mem", func(i int) float64 { return float64(hist[i].MemUsed) }},
			{"rss", func(i int) float64 { return float64(hist[i].RSS) }},
			{"cpu", func(i int) float64 { return hist[i].CPU }},
		} {
			v := make([]float64, len(hist))
			known := false
			for i := range hist {
				v[i] = f.get(i)
				known = known || v[i] != 0
			}
			if known {
				parts = append(parts, f.name+" "+style.Sparkline(v, w))
			}
		}
		out += "\n" + th.Render(th.Dim, strings.Join(parts, "  ")+"  (per refresh)")
	}
	return out + "\n"
}

package workbench

import (
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"selmix/tui/pane"
	"selmix/tui/style"
)

func (m *Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	v.WindowTitle = "selmix " + m.run.Info.Name
	return v
}

// Render is the whole screen as text, exactly w×h.
func (m *Model) Render() string {
	th := m.ctx.Theme
	parts := []string{m.header.View()}
	rs := m.rects()
	frame := func(i int) string {
		p := m.panes[i]
		return style.Frame(th, p.Title(), p.View(), rs[i].w, rs[i].h, i == m.focus)
	}
	switch m.layout {
	case grid:
		parts = append(parts,
			style.JoinH(frame(paneClasses), frame(paneHeatmap)),
			style.JoinH(frame(paneMultipliers), frame(paneCurves)),
			frame(paneLog))
	case medium:
		mid := paneCurves
		if m.focus == paneMultipliers {
			mid = paneMultipliers
		}
		parts = append(parts, style.JoinH(frame(paneClasses), frame(paneHeatmap)), frame(mid), frame(paneLog))
	default:
		parts = append(parts, m.tabs(), frame(m.focus), m.status())
	}
	parts = append(parts, m.helpBar())
	return m.dialogs.Draw(style.Fit(strings.Join(parts, "\n"), m.w, m.h), m.w, m.h)
}

func (m *Model) tabs() string {
	th := m.ctx.Theme
	var b strings.Builder
	for i, t := range paneTabs {
		label := fmt.Sprintf(" %s ", t)
		if i == m.focus {
			if th.Plain {
				label = "[" + t + "]"
			} else {
				label = th.Selected.Render(label)
			}
		} else {
			label = th.Render(th.Dim, label)
		}
		if i > 0 {
			b.WriteString(th.Render(th.Dim, "│"))
		}
		b.WriteString(label)
	}
	b.WriteString(th.Render(th.Dim, fmt.Sprintf("  %s/%s switch", m.ctx.Keys.Next.Help().Key, m.ctx.Keys.Prev.Help().Key)))
	return b.String()
}

// status is the newest event-log line (narrow layout: the log is a tab).
func (m *Model) status() string {
	th := m.ctx.Theme
	switch m.state {
	case Loading:
		return th.Render(th.Dim, "starting the run: evaluating the pre-trained model…")
	case Finished:
		if m.ctl != nil {
			return th.Render(th.Good, fmt.Sprintf("run ended; press %s to leave (the summary is printed on exit)", m.ctx.Keys.Quit.Help().Key))
		}
	}
	if n := len(m.run.Log); n > 0 {
		e := m.run.Log[n-1]
		return th.Render(th.Dim, fmt.Sprintf("%6d  ", e.Step)) + e.Text
	}
	return ""
}

func (m *Model) helpBar() string {
	k, th := m.ctx.Keys, m.ctx.Theme
	if m.flash != "" {
		return th.Render(th.Warn, style.PadRight(m.flash, m.w))
	}
	p := m.panes[m.focus]
	if c, ok := p.(pane.Capturer); ok && c.Capturing() {
		return m.help.ShortHelpView(p.ShortHelp()) // global keys are text now
	}
	// Most needed first: the bar is cut at the terminal's width. The
	// focused pane's keys stand under its name, between bars: they work
	// in that pane only.
	rest := []key.Binding{k.Pause, k.Step, k.SUp, k.Objective, k.Policy, k.Edit, k.Fork}
	if m.ended() {
		// Only what still works: a fork from here with a change, or
		// with more steps (the run extended).
		rest = nil
		if m.fork != nil {
			f := k.Fork
			f.SetHelp(f.Help().Key, "fork or extend")
			rest = []key.Binding{f}
		}
	}
	if m.layout != tabs || m.ctl == nil {
		rest = append(rest, k.Next) // the tabs say so in their bar
	}
	// Arrows scroll everywhere: the pane's own keys are the rest.
	var own []key.Binding
	for _, b := range p.ShortHelp() {
		if !slices.ContainsFunc([]key.Binding{k.Up, k.Down, k.Left, k.Right}, func(a key.Binding) bool { return slices.Equal(a.Keys(), b.Keys()) }) {
			own = append(own, b)
		}
	}
	bar := m.help.ShortHelpView([]key.Binding{k.Help, k.Quit})
	if len(own) > 0 {
		bar += "  " + th.Render(th.Dim, "│ "+paneTabs[m.focus]+":") + " " + m.help.ShortHelpView(own) + " " + th.Render(th.Dim, "│")
	}
	var global []key.Binding
	for _, b := range rest {
		if !slices.ContainsFunc(own, func(o key.Binding) bool { return slices.Equal(o.Keys(), b.Keys()) }) {
			global = append(global, b)
		}
	}
	return bar + "  " + fitHelp(m.help, global, m.w-style.Width(bar)-2)
}

// fitHelp is the short help of as many of bs as fit in w columns, with
// " …" after the last whole key when some are left out (help.Model's own
// cut lets an item overflow when the ellipsis does not fit).
func fitHelp(h help.Model, bs []key.Binding, w int) string {
	h.SetWidth(0)
	for n := len(bs); n > 0; n-- {
		v := h.ShortHelpView(bs[:n])
		if n < len(bs) {
			v += " …"
		}
		if style.Width(v) <= w {
			return v
		}
	}
	return ""
}

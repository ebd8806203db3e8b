package workbench

import (
	"fmt"
	"math"
	"strconv"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"selmix/core/loop"
	"selmix/tui/dialog"
	"selmix/tui/pane"
	"selmix/tui/runstate"
	"selmix/tui/whatif"
)

// key routes a key press: to the top overlay if any, to a pane that is
// reading text, to the workbench's own binding, else to the focused pane.
func (m *Model) key(kp tea.KeyPressMsg) tea.Cmd {
	if m.dialogs.Len() > 0 {
		cmd := m.act(m.dialogs.Update(kp))
		return tea.Batch(cmd, m.askPreview(whatif.Debounce))
	}
	if m.capturing(kp) {
		return m.panes[m.focus].Update(kp)
	}
	if h := m.binding(kp); h != nil {
		return h()
	}
	return m.panes[m.focus].Update(kp)
}

// capturing reports whether the focused pane is reading text (a search
// prompt): it takes every key but a quit key that types nothing (ctrl+c).
func (m *Model) capturing(kp tea.KeyPressMsg) bool {
	c, ok := m.panes[m.focus].(pane.Capturer)
	return ok && c.Capturing() && (kp.Text != "" || !key.Matches(kp, m.ctx.Keys.Quit))
}

// binding is the workbench's handler of kp, nil if kp is the focused
// pane's.
func (m *Model) binding(kp tea.KeyPressMsg) func() tea.Cmd {
	k := m.ctx.Keys
	for _, b := range []struct {
		keys key.Binding
		do   func() tea.Cmd
	}{
		{k.Quit, func() tea.Cmd { return m.quitKey(kp) }},
		{k.Runs, m.runsKey},
		{k.Help, m.push(m.helpDialog)},
		{k.Next, func() tea.Cmd { m.focus = (m.focus + 1) % nPanes; return nil }},
		{k.Prev, func() tea.Cmd { m.focus = (m.focus + nPanes - 1) % nPanes; return nil }},
		{k.Pause, m.pauseKey},
		{k.Step, m.stepKey},
		{k.SUp, func() tea.Cmd { return m.scaleS(true) }},
		{k.SDown, func() tea.Cmd { return m.scaleS(false) }},
		{k.Objective, m.pushControl(m.objectivePicker)},
		{k.Policy, m.pushControl(m.policyPicker)},
		{k.Edit, m.pushControl(m.editForm)},
		{k.Fork, m.forkKey},
		{k.Export, m.exportKey},
	} {
		if key.Matches(kp, b.keys) {
			return b.do
		}
	}
	return nil
}

// push opens the dialog d makes.
func (m *Model) push(d func() dialog.Dialog) func() tea.Cmd {
	return func() tea.Cmd { m.dialogs.Push(d()); return nil }
}

// pushControl opens the dialog d makes if controls can go to the run,
// with its what-if forecast.
func (m *Model) pushControl(d func() dialog.Dialog) func() tea.Cmd {
	return func() tea.Cmd {
		if !m.controllable() {
			return nil
		}
		m.dialogs.Push(d())
		return m.askPreview(0)
	}
}

// quitKey quits at once where nothing runs on (a recorded, ended or
// failed run; ctrl+c before the first snapshot), else asks.
func (m *Model) quitKey(kp tea.KeyPressMsg) tea.Cmd {
	if m.ctl == nil || m.state == Finished || m.state == Failed || m.state == Loading && kp.String() == "ctrl+c" {
		m.quit = true
		return tea.Quit
	}
	m.dialogs.Push(dialog.NewQuit(m.ctx, m.attached, m.run.Info.Dir))
	return nil
}

// runsKey leaves for the runs browser, only where leaving does not stop
// the run: a recorded run, or one living in another process.
func (m *Model) runsKey() tea.Cmd {
	if m.ctl != nil && !m.attached {
		m.run.Note(runstate.Warn, "the runs browser opens from a recorded run or one in the background: quitting here stops this run")
		return nil
	}
	m.quit, m.detached, m.browse = true, m.attached, true
	return tea.Quit
}

func (m *Model) pauseKey() tea.Cmd {
	if m.run.Latest.State == loop.Paused {
		m.send(loop.Control{Op: loop.OpResume})
	} else {
		m.send(loop.Control{Op: loop.OpPause})
	}
	return nil
}

func (m *Model) stepKey() tea.Cmd {
	if m.run.Latest.State != loop.Paused && m.controllable() {
		m.run.Note(runstate.Warn, fmt.Sprintf("single step works while paused: press %s first", m.ctx.Keys.Pause.Help().Key))
		return nil
	}
	m.send(loop.Control{Op: loop.OpStep})
	return nil
}

// forkKey opens the fork form at the current step, or says how to fork
// from a shell.
func (m *Model) forkKey() tea.Cmd {
	if m.fork == nil {
		m.run.Note(runstate.Warn, fmt.Sprintf("fork from a shell: selmix fork %s --at %d", m.idOr("RUN"), m.run.Latest.Step))
		return nil
	}
	m.forkStep = m.run.Latest.Step
	m.dialogs.Push(m.forkForm(m.forkStep))
	return nil
}

// exportKey writes the plots off the UI loop, or says how to from a
// shell.
func (m *Model) exportKey() tea.Cmd {
	if m.export == nil {
		m.run.Note(runstate.Warn, fmt.Sprintf("plots are written when the run ends, or from a shell: selmix export %s", m.idOr("RUN")))
		return nil
	}
	export := m.export
	m.run.Note(runstate.Note, "exporting plots…")
	return func() tea.Msg { t, err := export(); return NoteMsg{t, err} }
}

// ended says whether the run takes no more controls: recorded, or over.
func (m *Model) ended() bool {
	return m.ctl == nil || m.state == Finished || m.state == Failed || m.run.Summary != nil
}

// controllable says whether controls can go to the engine now, and logs
// why not otherwise.
func (m *Model) controllable() bool {
	switch {
	case m.ctl == nil:
		m.run.Note(runstate.Warn, "read-only: this is a recorded run")
	case m.state == Loading:
		m.run.Note(runstate.Warn, "the run has not started yet")
	case m.ended():
		m.run.Note(runstate.Warn, fmt.Sprintf("the run has ended: %s forks it from here with a change, or more steps to extend it",
			m.ctx.Keys.Fork.Help().Key))
	default:
		return true
	}
	return false
}

func (m *Model) send(c loop.Control) {
	if m.controllable() {
		c.Source = loop.SourceUser
		m.ctl.Send(c)
	}
}

// scaleS multiplies s by 1.25 (or divides), compounding presses made
// before the engine acknowledges the previous one; the footer shows the
// forecast of the new s for a few seconds.
func (m *Model) scaleS(up bool) tea.Cmd {
	if !m.controllable() {
		return nil
	}
	s := m.run.Latest.Hyper.S
	if m.pendingS != 0 {
		s = m.pendingS
	}
	switch {
	case up && s == 0:
		s = 1
	case up:
		s *= 1.25
	default:
		s /= 1.25
	}
	// Four significant digits keep the logged control readable; the
	// shortest text of the rounded value parses back to it exactly.
	e := math.Pow(10, 3-math.Floor(math.Log10(s)))
	m.pendingS = math.RoundToEven(s*e) / e
	m.ctl.Send(loop.Control{Op: loop.OpSet, Key: "s", Value: strconv.FormatFloat(m.pendingS, 'g', -1, 64), Source: loop.SourceUser})
	return m.askFlash(m.pendingS)
}

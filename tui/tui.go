// Package tui is the selmix workbench: a Bubble Tea program that shows a
// live (or recorded) run in panes and sends the user's controls to the
// engine. The root model is a small state machine (loading, running,
// finished, error); each pane is its own package behind pane.Component.
package tui

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"selmix/core/train"
	"selmix/tui/classes"
	"selmix/tui/curves"
	"selmix/tui/dialog"
	"selmix/tui/eventlog"
	"selmix/tui/header"
	"selmix/tui/heatmap"
	"selmix/tui/history"
	"selmix/tui/keys"
	"selmix/tui/multipliers"
	"selmix/tui/pane"
)

// State is the root model's state.
type State int

const (
	Loading  State = iota // no snapshot yet
	Running               // snapshots arriving (running or paused)
	Finished              // the stream closed
	Failed                // the run or the reader failed
)

func (s State) String() string { return [...]string{"loading", "running", "finished", "error"}[s] }

// Options configure a workbench.
type Options struct {
	Info  history.Info
	Ctl   Controller // nil: read-only (a recorded run)
	Keys  *keys.Map  // nil: keys.Default()
	Color bool       // false: plain theme (NO_COLOR, tests)
	// KeysPath is where the help overlay says keys can be remapped.
	KeysPath string
	// Attached: the run lives in another process, so quitting may detach
	// and leave it running.
	Attached bool
	// Fork and Export do the work behind f and x. They run as commands,
	// off the UI loop, and return a line for the event log; nil means the
	// key only says how to do it from a shell. Fork gets the step and the
	// configuration overrides (section.key=value) chosen in its form.
	Fork   func(step int, sets []string) (string, error)
	Export func() (string, error)
	// LoadMatrices, if set, is called once, off the UI loop, when the
	// workbench starts: snapshots replayed from a run's log come without
	// G and P, and it reads those of the last refresh.
	LoadMatrices func() MatricesMsg
}

// NoteMsg is the result of background work started from a key: a line
// for the event log.
type NoteMsg struct {
	Text string
	Err  error
}

// Pane indices in focus order.
const (
	paneClasses = iota
	paneHeatmap
	paneMultipliers
	paneCurves
	paneLog
	nPanes
)

var paneTabs = [nPanes]string{"classes", "G·P", "s·λ", "curves", "events"}

// Model is the root model.
type Model struct {
	ctx    *pane.Context
	run    *history.Run
	ctl    Controller
	state  State
	header *header.Model
	panes  [nPanes]pane.Component
	focus  int
	w, h   int
	layout layout

	dialogs *dialog.Stack // overlays over the panes; the top one takes the keys
	help    help.Model

	keysPath string

	pendingS float64 // s requested by +/- and not yet acknowledged; 0 = none
	quit     bool    // the user quit (the caller stops the run unless detached)
	attached bool    // the run lives in another process
	detached bool    // the user quit leaving the run going
	browse   bool    // the user quit to the runs browser
	forkStep int     // the step the open fork form forks at
	fork     func(step int, sets []string) (string, error)
	export   func() (string, error)
	matrices func() MatricesMsg
}

// New returns the workbench model. It reads nothing by itself: feed it
// SnapshotMsg, ClosedMsg and ErrMsg (see Follow).
func New(o Options) *Model {
	km := o.Keys
	if km == nil {
		km = keys.Default()
	}
	ctx := &pane.Context{Theme: pane.NewTheme(o.Color), Keys: km}
	run := history.New(o.Info)
	m := &Model{ctx: ctx, run: run, ctl: o.Ctl, header: header.New(ctx, run), dialogs: dialog.NewStack(ctx), help: help.New(), keysPath: o.KeysPath, attached: o.Attached, fork: o.Fork, export: o.Export, matrices: o.LoadMatrices}
	if !o.Color {
		m.help.Styles = help.Styles{}
	}
	m.help.ShortSeparator = "  "
	m.panes = [nPanes]pane.Component{
		classes.New(ctx, run), heatmap.New(ctx, run), multipliers.New(ctx, run),
		curves.New(ctx, run), eventlog.New(ctx, run),
	}
	m.setSize(80, 24)
	return m
}

// State is the root state; Quit reports whether the user quit.
func (m *Model) State() State { return m.state }
func (m *Model) Quit() bool   { return m.quit }

// Detached reports whether the user quit leaving the run going (attached
// workbenches only).
func (m *Model) Detached() bool { return m.detached }

// Browse reports whether the user left for the runs browser (the run, if
// attached, goes on).
func (m *Model) Browse() bool { return m.browse }

// Run is the accumulated run data (for tests and the caller's summary).
func (m *Model) Run() *history.Run { return m.run }

func (m *Model) Init() tea.Cmd {
	if m.matrices == nil {
		return nil
	}
	load := m.matrices
	return func() tea.Msg { return load() }
}

func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.setSize(msg.Width, msg.Height)
	case SnapshotMsg:
		m.applyAll(msg.Snapshot)
	case SnapshotsMsg:
		m.applyAll(msg...)
	case ClosedMsg:
		m.run.Closed = true
		if m.state != Failed {
			m.state = Finished
		}
	case ErrMsg:
		m.run.Note(history.Error, "error: "+msg.Err.Error())
		m.fail()
	case MatricesMsg:
		switch {
		case msg.Err != nil:
			m.run.Note(history.Warn, "G and P: "+msg.Err.Error())
		case msg.G != nil:
			gp := hasGP(m.run.Cur)
			m.run.SetMatrices(msg.Step, msg.G, msg.P)
			if hasGP(m.run.Cur) != gp {
				m.refreshPanes()
			}
		}
		if msg.Note != "" {
			m.run.Note(history.Note, msg.Note)
		}
	case NoteMsg:
		if msg.Err != nil {
			m.run.Note(history.Warn, msg.Err.Error())
		} else {
			m.run.Note(history.Note, msg.Text)
		}
	case tea.KeyPressMsg:
		return m, m.key(msg)
	}
	return m, nil
}

func (m *Model) fail() {
	m.state = Failed
	if m.dialogs.Len() == 0 {
		msg := m.run.Err
		if n := len(m.run.Log); msg == "" && n > 0 {
			msg = m.run.Log[n-1].Text
		}
		m.dialogs.Push(dialog.NewError(m.ctx, msg))
	}
}

func (m *Model) applyAll(ss ...train.Snapshot) {
	k, cur, gp := m.run.K(), m.run.Cur, hasGP(m.run.Cur)
	for _, s := range ss {
		m.apply(s)
	}
	if m.run.K() != k {
		m.setSize(m.w, m.h) // the layout depends on K
	}
	if m.run.Cur != cur || hasGP(m.run.Cur) != gp {
		m.refreshPanes()
	}
}

// refreshPanes has the panes derive their sort orders and aggregates
// from the current refresh (here, not in View).
func (m *Model) refreshPanes() {
	for _, p := range m.panes {
		p.Update(pane.RefreshMsg{})
	}
}

// hasGP reports whether rs carries G and P: they may follow their
// refresh (loaded lazily at large K).
func hasGP(rs *train.Refresh) bool { return rs != nil && rs.G != nil && rs.P != nil }

func (m *Model) apply(s train.Snapshot) {
	m.run.Apply(s)
	if m.state == Loading {
		m.state = Running
	}
	switch s.Kind {
	case train.KindError:
		m.fail()
	case train.KindControl:
		// The engine's typed s after the ack says whether ours arrived.
		if a := s.Ack; a != nil && a.Control.Op == train.OpSet && a.Control.Key == "s" && (a.Err != "" || s.Hyper.S == m.pendingS) {
			m.pendingS = 0
		}
	}
}

// controllable says whether controls can go to the engine now, and logs
// why not otherwise.
func (m *Model) controllable() bool {
	switch {
	case m.ctl == nil:
		m.run.Note(history.Warn, "read-only: this is a recorded run")
	case m.state == Loading:
		m.run.Note(history.Warn, "the run has not started yet")
	case m.state == Finished || m.state == Failed || m.run.Summary != nil:
		m.run.Note(history.Warn, "the run has ended: controls no longer apply")
	default:
		return true
	}
	return false
}

func (m *Model) send(c train.Control) {
	if m.controllable() {
		m.ctl.Send(c)
	}
}

func (m *Model) key(kp tea.KeyPressMsg) tea.Cmd {
	k := m.ctx.Keys
	if m.dialogs.Len() > 0 {
		return m.act(m.dialogs.Update(kp))
	}

	// A pane reading text (a search prompt) takes every key but a quit
	// key that types nothing (ctrl+c).
	if c, ok := m.panes[m.focus].(pane.Capturer); ok && c.Capturing() && (kp.Text != "" || !key.Matches(kp, k.Quit)) {
		return m.panes[m.focus].Update(kp)
	}

	switch {
	case key.Matches(kp, k.Quit):
		if m.ctl == nil || m.state == Finished || m.state == Failed || m.state == Loading && kp.String() == "ctrl+c" {
			m.quit = true
			return tea.Quit
		}
		m.dialogs.Push(dialog.NewQuit(m.ctx, m.attached, m.run.Info.Dir))
	case key.Matches(kp, k.Runs):
		// Only where leaving does not stop the run: a recorded run, or
		// one living in another process.
		if m.ctl != nil && !m.attached {
			m.run.Note(history.Warn, "the runs browser opens from a recorded run or one in the background: quitting here stops this run")
			break
		}
		m.quit, m.detached, m.browse = true, m.attached, true
		return tea.Quit
	case key.Matches(kp, k.Help):
		m.dialogs.Push(m.helpDialog())
	case key.Matches(kp, k.Next):
		m.focus = (m.focus + 1) % nPanes
	case key.Matches(kp, k.Prev):
		m.focus = (m.focus + nPanes - 1) % nPanes
	case key.Matches(kp, k.Pause):
		if m.run.Latest.State == train.Paused {
			m.send(train.Control{Op: train.OpResume})
		} else {
			m.send(train.Control{Op: train.OpPause})
		}
	case key.Matches(kp, k.Step):
		if m.run.Latest.State != train.Paused && m.controllable() {
			m.run.Note(history.Warn, fmt.Sprintf("single step works while paused: press %s first", k.Pause.Help().Key))
			break
		}
		m.send(train.Control{Op: train.OpStep})
	case key.Matches(kp, k.SUp), key.Matches(kp, k.SDown):
		m.scaleS(key.Matches(kp, k.SUp))
	case key.Matches(kp, k.Objective):
		if m.controllable() {
			m.dialogs.Push(m.objectivePicker())
		}
	case key.Matches(kp, k.Policy):
		if m.controllable() {
			m.dialogs.Push(m.policyPicker())
		}
	case key.Matches(kp, k.Edit):
		if m.controllable() {
			m.dialogs.Push(m.editForm())
		}
	case key.Matches(kp, k.Fork):
		if m.fork == nil {
			m.run.Note(history.Warn, fmt.Sprintf("fork from a shell: selmix fork %s --at %d", m.idOr("RUN"), m.run.Latest.Step))
			return nil
		}
		m.forkStep = m.run.Latest.Step
		m.dialogs.Push(m.forkForm(m.forkStep))
	case key.Matches(kp, k.Export):
		if m.export == nil {
			m.run.Note(history.Warn, fmt.Sprintf("plots are written when the run ends, or from a shell: selmix export %s", m.idOr("RUN")))
			return nil
		}
		export := m.export
		m.run.Note(history.Note, "exporting plots…")
		return func() tea.Msg { t, err := export(); return NoteMsg{t, err} }
	default:
		return m.panes[m.focus].Update(kp)
	}
	return nil
}

// act carries out what a dialog asked for.
func (m *Model) act(a dialog.Action) tea.Cmd {
	switch a := a.(type) {
	case dialog.Quit:
		m.quit, m.detached = true, a.Detach && m.attached
		return tea.Quit
	case dialog.Submit:
		if a.ID == forkID {
			step, sets, fork := m.forkStep, forkSets(a.Values), m.fork
			m.run.Note(history.Note, fmt.Sprintf("forking at the checkpoint at or before step %d…", step))
			return func() tea.Msg { t, err := fork(step, sets); return NoteMsg{t, err} }
		}
		for _, kv := range a.Values {
			m.send(train.Control{Op: train.OpSet, Key: kv.Key, Value: kv.Value})
		}
	}
	return nil
}

func (m *Model) nameOr(def string) string {
	if m.run.Info.Name != "" {
		return m.run.Info.Name
	}
	return def
}

func (m *Model) idOr(def string) string {
	if m.run.Info.ID != "" {
		return m.run.Info.ID
	}
	return def
}

// scaleS multiplies s by 1.25 (or divides), compounding presses made
// before the engine acknowledges the previous one.
func (m *Model) scaleS(up bool) {
	if !m.controllable() {
		return
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
	m.ctl.Send(train.Control{Op: train.OpSet, Key: "s", Value: strconv.FormatFloat(m.pendingS, 'g', -1, 64)})
}

// layout is how the panes share the screen.
type layout int

const (
	tabs   layout = iota // one pane at a time under a tab bar (below 120×36)
	medium               // classes | G·P; s·λ or curves full width; events
	grid                 // every pane at once (from 150×46)
)

func (m *Model) setSize(w, h int) {
	m.w, m.h = max(w, 20), max(h, 8)
	switch {
	case m.w >= 150 && m.h >= 46:
		m.layout = grid
	case m.w >= 120 && m.h >= 36:
		m.layout = medium
	default:
		m.layout = tabs
	}
	m.help.SetWidth(m.w)
	m.header.SetSize(m.w, 2)
	for i, r := range m.rects() {
		m.panes[i].SetSize(r.w-2, r.h-2)
	}
}

type rect struct{ w, h int }

// rects sizes the panes: a grid when there is room for all five, two
// rows and a strip of events when there is room for the curves beside
// their table (s·λ and the curves then share the middle row: the focused
// one of the two is shown), else one pane at a time.
func (m *Model) rects() [nPanes]rect {
	var r [nPanes]rect
	if m.layout == tabs {
		ph := m.h - 5 // header 2, tabs 1, status 1, help 1
		for i := range r {
			r[i] = rect{m.w, ph}
		}
		return r
	}
	body := m.h - 3 // header 2, help 1
	// The top row needs K rows plus headers and legends; the rest goes to
	// curves and the log rather than to blank space.
	h1 := body * 45 / 100
	if K := m.run.K(); K > 0 {
		h1 = min(h1, max(K+7, 12))
	}
	l1 := m.w * 45 / 100
	r[paneClasses] = rect{l1, h1}
	r[paneHeatmap] = rect{m.w - l1, h1}
	if m.layout == medium {
		// Taller and evener top row than the grid's: K = 10 fits whole.
		h1 = body * 55 / 100
		if K := m.run.K(); K > 0 {
			h1 = min(h1, max(K+7, 12))
		}
		l1 = m.w / 2
		r[paneClasses] = rect{l1, h1}
		r[paneHeatmap] = rect{m.w - l1, h1}
		h3 := max(4, (body-h1)/4)
		h2 := body - h1 - h3
		r[paneMultipliers] = rect{m.w, h2}
		r[paneCurves] = rect{m.w, h2}
		r[paneLog] = rect{m.w, h3}
		return r
	}
	h2 := (body - h1) * 55 / 100
	h3 := body - h1 - h2
	l2 := m.w * 35 / 100
	r[paneMultipliers] = rect{l2, h2}
	r[paneCurves] = rect{m.w - l2, h2}
	r[paneLog] = rect{m.w, h3}
	return r
}

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
		return pane.Frame(th, p.Title(), p.View(), rs[i].w, rs[i].h, i == m.focus)
	}
	switch m.layout {
	case grid:
		parts = append(parts,
			pane.JoinH(frame(paneClasses), frame(paneHeatmap)),
			pane.JoinH(frame(paneMultipliers), frame(paneCurves)),
			frame(paneLog))
	case medium:
		mid := paneCurves
		if m.focus == paneMultipliers {
			mid = paneMultipliers
		}
		parts = append(parts, pane.JoinH(frame(paneClasses), frame(paneHeatmap)), frame(mid), frame(paneLog))
	default:
		parts = append(parts, m.tabs(), frame(m.focus), m.status())
	}
	parts = append(parts, m.helpBar())
	return m.dialogs.Draw(pane.Fit(strings.Join(parts, "\n"), m.w, m.h), m.w, m.h)
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
	p := m.panes[m.focus]
	if c, ok := p.(pane.Capturer); ok && c.Capturing() {
		return m.help.ShortHelpView(p.ShortHelp()) // global keys are text now
	}
	// Most needed first: the bar is cut at the terminal's width. The
	// focused pane's keys stand under its name, between bars: they work
	// in that pane only.
	rest := []key.Binding{k.Pause, k.Step, k.SUp, k.Objective, k.Policy, k.Edit, k.Fork}
	if m.ctl == nil {
		rest = nil
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
	return bar + "  " + fitHelp(m.help, global, m.w-pane.Width(bar)-2)
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
		if pane.Width(v) <= w {
			return v
		}
	}
	return ""
}

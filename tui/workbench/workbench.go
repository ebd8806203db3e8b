// Package workbench is the selmix single-run workbench: a Bubble Tea
// program that shows a live (or recorded) run in panes and sends the
// user's controls to the engine. Its model is a small state machine
// (loading, running, finished, error); each pane is its own package
// under tui/ behind pane.Component.
package workbench

import (
	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"

	"selmix/core/loop"
	"selmix/tui/classes"
	"selmix/tui/curves"
	"selmix/tui/dialog"
	"selmix/tui/eventlog"
	"selmix/tui/header"
	"selmix/tui/heatmap"
	"selmix/tui/keys"
	"selmix/tui/multipliers"
	"selmix/tui/pane"
	"selmix/tui/runstate"
	"selmix/tui/style"
	"selmix/tui/whatif"
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
	Info  runstate.Info
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
	// key only says how to do it from a shell. Fork gets where the fork
	// starts, as `selmix fork --at` takes it (a step, or "best"), and the
	// configuration overrides (section.key=value) chosen in its form.
	Fork   func(at string, sets []string) (string, error)
	Export func() (string, error)
	// LoadMatrices, if set, is called once, off the UI loop, when the
	// workbench starts: snapshots replayed from a run's log come without
	// G and P, and it reads those of the last refresh.
	LoadMatrices func() MatricesMsg
	// Forecast computes the what-if preview (train.Preview, wired by the
	// command line); nil: the preview says it has none.
	Forecast whatif.Forecaster
	// Console is what the worker wrote before the workbench came (its
	// start-up, from the run's worker log): the c console starts with it.
	Console []string
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
	run    *runstate.State
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
	fork     func(at string, sets []string) (string, error)
	export   func() (string, error)
	matrices func() MatricesMsg

	preview  *whatif.Preview // the what-if forecast of the open dialog or of s±
	flashing bool            // the preview's next answer is for the footer
	flash    string          // the footer's forecast after s±; "" for the keys
	flashSeq int
}

// New returns the workbench model. It reads nothing by itself: feed it
// SnapshotMsg, ClosedMsg and ErrMsg (see Follow).
func New(o Options) *Model {
	km := o.Keys
	if km == nil {
		km = keys.Default()
	}
	ctx := &pane.Context{Theme: style.NewTheme(o.Color), Keys: km}
	run := runstate.New(o.Info)
	for _, l := range o.Console {
		run.AddConsole(l)
	}
	m := &Model{ctx: ctx, run: run, ctl: o.Ctl, header: header.New(ctx, run), dialogs: dialog.NewStack(ctx), help: help.New(), keysPath: o.KeysPath, attached: o.Attached, fork: o.Fork, export: o.Export, matrices: o.LoadMatrices,
		preview: whatif.New(o.Forecast)}
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
func (m *Model) Run() *runstate.State { return m.run }

func (m *Model) Init() tea.Cmd {
	if m.matrices == nil {
		return nil
	}
	load := m.matrices
	return func() tea.Msg { return load() }
}

func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if cmd, ok := m.previewUpdate(msg); ok {
		return m, cmd
	}
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.setSize(msg.Width, msg.Height)
	case SnapshotMsg:
		return m, m.applyAll(msg.Snapshot)
	case SnapshotsMsg:
		return m, m.applyAll(msg...)
	case ClosedMsg:
		m.run.Closed = true
		if m.state != Failed {
			m.state = Finished
		}
	case ErrMsg:
		m.run.Note(runstate.Error, "error: "+msg.Err.Error())
		m.fail()
	case MatricesMsg:
		switch {
		case msg.Err != nil:
			m.run.Note(runstate.Warn, "G and P: "+msg.Err.Error())
		case msg.G != nil:
			gp := hasGP(m.run.Cur)
			m.run.SetMatrices(msg.Step, msg.G, msg.P)
			if hasGP(m.run.Cur) != gp {
				m.refreshPanes()
			}
		}
		if msg.Note != "" {
			m.run.Note(runstate.Note, msg.Note)
		}
	case NoteMsg:
		if msg.Err != nil {
			m.run.Note(runstate.Warn, msg.Err.Error())
		} else {
			m.run.Note(runstate.Note, msg.Text)
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

// applyAll takes snapshots; a new refresh or control re-asks the open
// dialog's forecast.
func (m *Model) applyAll(ss ...loop.Snapshot) tea.Cmd {
	k, cur, gp, hyper := m.run.K(), m.run.Cur, hasGP(m.run.Cur), m.run.Latest.Hyper
	for _, s := range ss {
		m.apply(s)
	}
	if m.run.K() != k {
		m.setSize(m.w, m.h) // the layout depends on K
	}
	if m.run.Cur != cur || hasGP(m.run.Cur) != gp {
		m.refreshPanes()
	}
	if m.run.Cur != cur || m.run.Latest.Hyper != hyper {
		return m.askPreview(0)
	}
	return nil
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
func hasGP(rs *loop.Refresh) bool { return rs != nil && rs.G != nil && rs.P != nil }

func (m *Model) apply(s loop.Snapshot) {
	m.run.Apply(s)
	if m.state == Loading {
		m.state = Running
	}
	switch s.Kind {
	case loop.KindError:
		m.fail()
	case loop.KindControl:
		// The engine's typed s after the ack says whether ours arrived.
		if a := s.Ack; a != nil && a.Control.Op == loop.OpSet && a.Control.Key == "s" && (a.Err != "" || s.Hyper.S == m.pendingS) {
			m.pendingS = 0
		}
	}
}

// Package browser is the runs browser: every run of a runs root in one
// list (name, status, objective, policy, steps, ψ on test, best ψ, age,
// tags) that can be filtered by text and config key, sorted by any
// column and marked. It is a whole Bubble Tea program's model: Enter
// chooses a run to open, c chooses the marked runs to compare, and the
// caller acts on the choice (Chosen) and may show the list again.
//
// It reads only run.json, summary.json and config.toml of each run,
// never the event logs, and always off the UI goroutine (Load).
package browser

import (
	"maps"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"selmix/internal/safetext"
	"selmix/tui/pane"
)

// ListMsg is a fresh read of the runs root (the rows are the
// receiver's).
type ListMsg struct {
	Rows []Row
	Err  error
	took time.Duration // how long the read took
}

// ConfigMsg carries the config of runs by id (ReadConfigs).
type ConfigMsg map[string]map[string]string

// Load reads root off the UI goroutine.
func Load(root string) tea.Cmd {
	return func() tea.Msg {
		t0 := time.Now()
		es, err := Read(root)
		return ListMsg{Rows: es, Err: err, took: time.Since(t0)}
	}
}

// readConfigs reads the configs of dirs (by id) off the UI goroutine.
func readConfigs(dirs map[string]string) tea.Cmd {
	return func() tea.Msg { return ConfigMsg(ReadConfigs(dirs)) }
}

// The list is read again every refreshEvery, so live runs' steps and
// statuses move; a root so large that reading it takes long is read
// less often, so the browser never keeps a core busy.
const (
	refreshEvery = 2 * time.Second
	refreshDuty  = 10 // read at most 1/refreshDuty of the time
)

// Action is what the user chose to do with runs.
type Action int

// The choices.
const (
	None    Action = iota
	Open           // open (or attach to) one run
	Compare        // compare the marked runs
)

// Model is the runs browser.
type Model struct {
	ctx  *pane.Context
	root string
	now  func() time.Time

	all     []Row
	loaded  bool
	err     error
	view    []int // indices into all, filtered and sorted
	sel     int   // position in view
	top     int
	marked  map[string]bool
	filter  string
	typing  bool // the filter line has the keys
	sortBy  Column
	desc    bool
	note    string
	w, h    int
	action  Action
	chosen  []string
	reload  bool // re-read the root every refreshEvery
	selID   string
	compile Filter
	configs map[string]map[string]string // config.toml of runs by id, read once
}

// Option sets up a Model.
type Option func(*Model)

// WithClock makes the list measure ages from now() (tests fix it).
func WithClock(now func() time.Time) Option { return func(m *Model) { m.now = now } }

// WithoutRefresh keeps the first read: no periodic re-read (tests).
func WithoutRefresh() Option { return func(m *Model) { m.reload = false } }

// New returns the browser over root.
func New(ctx *pane.Context, root string, opts ...Option) *Model {
	m := &Model{ctx: ctx, root: root, now: time.Now, marked: map[string]bool{}, configs: map[string]map[string]string{}, sortBy: ColAge, w: 80, h: 24, reload: true}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Chosen is what the user asked for when the program ended: Open with
// one run id, Compare with the marked ids (in list order), or None.
func (m *Model) Chosen() (Action, []string) { return m.action, m.chosen }

// Marked returns the marked run ids in list order.
func (m *Model) Marked() []string {
	var out []string
	for _, i := range m.view {
		if m.marked[m.all[i].ID] {
			out = append(out, m.all[i].ID)
		}
	}
	return out
}

// Rows is the list as shown: filtered and sorted.
func (m *Model) Rows() []Row {
	out := make([]Row, len(m.view))
	for k, i := range m.view {
		out[k] = m.all[i]
	}
	return out
}

// SetNote shows a one-off message under the list (e.g. why a run the
// user chose could not be opened).
func (m *Model) SetNote(s string) { m.note = safetext.Line(s) }

// SetSize sets the screen size.
func (m *Model) SetSize(w, h int) { m.w, m.h = w, h }

// Init reads the root (and forgets the last choice, so the caller can run
// the same model again after acting on it).
func (m *Model) Init() tea.Cmd {
	m.action, m.chosen = None, nil
	return Load(m.root)
}

func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.SetSize(msg.Width, msg.Height)
	case ListMsg:
		var cmds []tea.Cmd
		if dirs := m.setList(msg); len(dirs) > 0 {
			cmds = append(cmds, readConfigs(dirs))
		}
		if m.reload {
			load := Load(m.root)
			cmds = append(cmds, tea.Tick(max(refreshEvery, refreshDuty*msg.took), func(time.Time) tea.Msg { return load() }))
		}
		return m, tea.Batch(cmds...)
	case ConfigMsg:
		maps.Copy(m.configs, msg)
		for i := range m.all {
			if c, ok := msg[m.all[i].ID]; ok {
				m.all[i].Config = c
			}
		}
		m.apply()
	case tea.KeyPressMsg:
		return m, m.key(msg)
	}
	return m, nil
}

// setList takes a fresh list; it returns the directories (by id) of the
// runs whose config has not been read yet.
func (m *Model) setList(msg ListMsg) map[string]string {
	if msg.Err != nil {
		m.err = msg.Err // the last list stays
		return nil
	}
	m.err, m.loaded = nil, true
	m.all = msg.Rows
	dirs := map[string]string{}
	for i := range m.all {
		e := &m.all[i]
		if c, ok := m.configs[e.ID]; ok {
			e.Config = c
		} else if e.Status != "broken" {
			dirs[e.ID] = e.Dir
		}
	}
	// Marks of runs that are gone are dropped.
	ids := make(map[string]bool, len(m.all))
	for i := range m.all {
		ids[m.all[i].ID] = true
	}
	for id := range m.marked {
		if !ids[id] {
			delete(m.marked, id)
		}
	}
	m.apply()
	return dirs
}

// apply recomputes the view from the filter and sort, keeping the
// selected run selected if it is still shown.
func (m *Model) apply() {
	m.compile = ParseFilter(m.filter)
	m.view = Select(m.all, m.compile, m.sortBy, m.desc)
	m.sel = 0
	for k, i := range m.view {
		if m.all[i].ID == m.selID {
			m.sel = k
			break
		}
	}
	m.remember()
}

func (m *Model) remember() {
	m.sel = max(0, min(m.sel, len(m.view)-1))
	if len(m.view) > 0 {
		m.selID = m.all[m.view[m.sel]].ID
	}
}

// Keys of the browser that the workbench's key map does not have.
var (
	keyMark    = key.NewBinding(key.WithKeys("space"), key.WithHelp("space", "mark"))
	keyCompare = key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "compare marked"))
	keyReverse = key.NewBinding(key.WithKeys("S"), key.WithHelp("S", "reverse"))
	keyAll     = key.NewBinding(key.WithKeys("A"), key.WithHelp("A", "mark all shown"))
	keyNone    = key.NewBinding(key.WithKeys("u"), key.WithHelp("u", "unmark all"))
)

func (m *Model) key(kp tea.KeyPressMsg) tea.Cmd {
	if m.typing {
		m.typeKey(kp)
		return nil
	}
	k := m.ctx.Keys
	m.note = ""
	n := len(m.view)
	switch {
	case key.Matches(kp, k.Quit):
		return tea.Quit
	case key.Matches(kp, k.Cancel):
		if m.filter != "" {
			m.filter = ""
			m.apply()
			return nil
		}
		return tea.Quit
	case key.Matches(kp, k.Search):
		m.typing = true
	case key.Matches(kp, k.Up):
		m.sel--
	case key.Matches(kp, k.Down):
		m.sel++
	case key.Matches(kp, k.Top):
		m.sel = 0
	case key.Matches(kp, k.Bottom):
		m.sel = n - 1
	case kp.String() == "pgdown":
		m.sel += max(1, m.rows()-1)
	case kp.String() == "pgup":
		m.sel -= max(1, m.rows()-1)
	case key.Matches(kp, k.Sort):
		m.sortBy = (m.sortBy + 1) % nColumns
		m.desc = m.sortBy == ColFinal || m.sortBy == ColBest || m.sortBy == ColSteps // the best first
		m.apply()
		return nil
	case key.Matches(kp, keyReverse):
		m.desc = !m.desc
		m.apply()
		return nil
	case key.Matches(kp, keyMark):
		if n > 0 {
			id := m.all[m.view[m.sel]].ID
			if m.marked[id] {
				delete(m.marked, id)
			} else {
				m.marked[id] = true
			}
			m.sel++
		}
	case key.Matches(kp, keyAll):
		for _, i := range m.view {
			m.marked[m.all[i].ID] = true
		}
	case key.Matches(kp, keyNone):
		clear(m.marked)
	case key.Matches(kp, k.Accept):
		if n == 0 {
			return nil
		}
		e := &m.all[m.view[m.sel]]
		if e.Status == "broken" {
			m.note = "run " + e.ID + " cannot be read (selmix runs show " + e.ID + ")"
			return nil
		}
		m.action, m.chosen = Open, []string{e.ID}
		return tea.Quit
	case key.Matches(kp, keyCompare):
		ids := m.Marked()
		if len(ids) == 0 {
			m.note = "mark runs with space first, then c compares them"
			return nil
		}
		m.action, m.chosen = Compare, ids
		return tea.Quit
	}
	m.remember()
	return nil
}

// typeKey edits the filter line; every key applies the filter at once.
func (m *Model) typeKey(kp tea.KeyPressMsg) {
	switch kp.String() {
	case "enter", "esc", "down", "up":
		m.typing = false
		if kp.String() == "esc" {
			m.filter = ""
		}
	case "backspace":
		if r := []rune(m.filter); len(r) > 0 {
			m.filter = string(r[:len(r)-1])
		}
	case "ctrl+u":
		m.filter = ""
	case "ctrl+c":
		m.typing = false
		return
	default:
		if t := kp.Text; t != "" {
			m.filter += safetext.Line(t)
		} else {
			return
		}
	}
	m.apply()
}

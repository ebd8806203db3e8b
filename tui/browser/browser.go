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
	"fmt"
	"maps"
	"math"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"selmix/tui/pane"
	"selmix/tui/style"
)

// ListMsg is a fresh read of the runs root (the entries are the
// receiver's).
type ListMsg struct {
	Entries []Entry
	Err     error
	took    time.Duration // how long the read took
}

// ConfigMsg carries the config of runs by id (ReadConfigs).
type ConfigMsg map[string]map[string]string

// Load reads root off the UI goroutine.
func Load(root string) tea.Cmd {
	return func() tea.Msg {
		t0 := time.Now()
		es, err := Read(root)
		return ListMsg{Entries: es, Err: err, took: time.Since(t0)}
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

	all     []Entry
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

// Entries is the list as shown: filtered and sorted.
func (m *Model) Entries() []Entry {
	out := make([]Entry, len(m.view))
	for k, i := range m.view {
		out[k] = m.all[i]
	}
	return out
}

// SetNote shows a one-off message under the list (e.g. why a run the
// user chose could not be opened).
func (m *Model) SetNote(s string) { m.note = Clean(s) }

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
	m.all = msg.Entries
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
			m.filter += Clean(t)
		} else {
			return
		}
	}
	m.apply()
}

func (m *Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	v.WindowTitle = "selmix runs"
	return v
}

// rows is how many runs fit in the list.
func (m *Model) rows() int { return max(1, m.h-6) }

// Render is the screen as text, exactly w×h.
func (m *Model) Render() string {
	th := m.ctx.Theme
	head := th.Render(th.Title, "selmix runs") + "  " + th.Render(th.Dim, Clean(m.root))
	if m.loaded {
		head += "  " + fmt.Sprintf("%d runs · %d shown · %d marked", len(m.all), len(m.view), len(m.marked))
	}
	fl := "/ " + m.filter
	switch {
	case m.typing:
		fl = th.Render(th.Accent, "/ "+m.filter+"▏")
	case m.filter == "":
		fl = th.Render(th.Dim, "/ filter: words, key=value, key~part (policy=uniform objective~recall)")
	}
	status := ""
	switch {
	case m.err != nil:
		status = th.Render(th.Bad, "error: "+Clean(m.err.Error()))
	case m.note != "":
		status = th.Render(th.Warn, m.note)
	case len(m.view) > 0:
		e := &m.all[m.view[m.sel]]
		status = th.Render(th.Dim, e.ID+"  "+e.Dir)
	}
	body := th.Render(th.Dim, "reading the runs…")
	switch {
	case m.loaded && len(m.all) == 0:
		body = th.Render(th.Dim, "no runs in "+Clean(m.root)+" (selmix run --headless makes one)")
	case m.loaded && len(m.view) == 0:
		body = th.Render(th.Dim, "no run matches the filter (esc clears it)")
	case m.loaded:
		body = m.table(m.w-2, m.h-5)
	}
	title := "runs · sorted by " + m.sortBy.String()
	if m.desc {
		title += " ↓"
	} else {
		title += " ↑"
	}
	frame := style.Frame(th, title, body, m.w, m.h-4, true)
	return style.Fit(strings.Join([]string{head, fl, frame, status, m.help()}, "\n"), m.w, m.h)
}

func (m *Model) help() string {
	k := m.ctx.Keys
	if m.typing {
		return m.ctx.Theme.Render(m.ctx.Theme.Dim, "type to filter  enter done  esc clear  ctrl+u erase")
	}
	parts := []string{
		k.Search.Help().Key + " filter", k.Sort.Help().Key + "/S sort", "space mark",
		k.Accept.Help().Key + " open", "c compare", k.Quit.Help().Key + " quit",
	}
	return m.ctx.Theme.Render(m.ctx.Theme.Dim, strings.Join(parts, "  "))
}

// table is the list in w columns and h lines: a header line, then as
// many runs as fit, scrolled to keep the selection in view.
func (m *Model) table(w, h int) string {
	th := m.ctx.Theme
	cols := m.layout(w)
	cells := func(e *Entry) []string {
		out := make([]string, len(cols))
		for i, c := range cols {
			out[i] = m.cell(c.col, e)
		}
		return out
	}
	line := func(cells []string) string {
		var b strings.Builder
		for i, c := range cols {
			if i > 0 {
				b.WriteString("  ")
			}
			if c.right {
				b.WriteString(style.PadLeft(cells[i], c.w))
			} else {
				b.WriteString(style.PadRight(cells[i], c.w))
			}
		}
		return b.String()
	}
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.col.String()
		if c.col == m.sortBy {
			if m.desc {
				names[i] += "↓"
			} else {
				names[i] += "↑"
			}
		}
	}
	out := []string{"    " + th.Render(th.Bold, line(names))}
	n := max(1, h-1)
	if m.sel < m.top {
		m.top = m.sel
	}
	if m.sel >= m.top+n {
		m.top = m.sel - n + 1
	}
	m.top = max(0, min(m.top, len(m.view)-n))
	for k := m.top; k < len(m.view) && k < m.top+n; k++ {
		e := &m.all[m.view[k]]
		cur, mark := "  ", "  "
		if k == m.sel {
			cur = "▶ "
		}
		if m.marked[e.ID] {
			mark = "● "
		}
		text := line(cells(e))
		switch {
		case k == m.sel && !th.Plain:
			text = th.Selected.Render(text)
		case e.Status == "live" || e.Status == "paused":
			text = th.Render(th.Accent, text)
		case e.Status == "crashed" || e.Status == "error" || e.Status == "broken":
			text = th.Render(th.Bad, text)
		case e.Status == "stopped":
			text = th.Render(th.Warn, text)
		}
		out = append(out, cur+mark+text)
	}
	return style.Fit(strings.Join(out, "\n"), w, h)
}

type colSpec struct {
	col   Column
	w     int
	right bool
}

// layout picks the columns that fit in w and their widths: numbers keep
// theirs, the run's name, objective and tags share what is left, and the
// tags and policy go first when the screen is narrow.
func (m *Model) layout(w int) []colSpec {
	avail := w - 4 // cursor and mark
	natural := func(c Column, lo, hi int) int {
		n := max(lo, style.Width(c.String())+1)
		for _, i := range m.view {
			n = max(n, style.Width(m.cell(c, &m.all[i])))
			if n >= hi {
				return hi
			}
		}
		return n
	}
	specs := []colSpec{
		{ColName, natural(ColName, 8, 30), false},
		{ColStatus, natural(ColStatus, 6, 8), false},
		{ColObjective, natural(ColObjective, 9, 18), false},
		{ColPolicy, natural(ColPolicy, 6, 10), false},
		{ColSteps, 6, true},
		{ColFinal, 7, true},
		{ColBest, 7, true},
		{ColAge, 4, true},
		{ColTags, natural(ColTags, 5, 40), false},
	}
	total := func() int {
		t := 0
		for _, s := range specs {
			t += s.w + 2
		}
		return t - 2
	}
	drop := func(c Column) {
		for i, s := range specs {
			if s.col == c {
				specs = append(specs[:i], specs[i+1:]...)
				return
			}
		}
	}
	shrink := func(c Column, lo int) {
		for i := range specs {
			if specs[i].col == c {
				specs[i].w = max(lo, specs[i].w-(total()-avail))
			}
		}
	}
	// Shrink, then drop, in order of what is least missed.
	shrink(ColTags, 5)
	if total() > avail {
		shrink(ColName, 12)
	}
	if total() > avail {
		shrink(ColObjective, 9)
	}
	if total() > avail {
		drop(ColTags)
	}
	if total() > avail {
		drop(ColPolicy)
	}
	if total() > avail {
		drop(ColAge)
	}
	if total() < avail { // the last column takes what is left
		specs[len(specs)-1].w += avail - total()
	}
	return specs
}

func (m *Model) cell(c Column, e *Entry) string {
	switch c {
	case ColName:
		return e.Label()
	case ColStatus:
		return e.Status
	case ColObjective:
		return e.Objective
	case ColPolicy:
		return e.Policy
	case ColSteps:
		return fmt.Sprint(e.Steps)
	case ColFinal:
		return num(e.Final)
	case ColBest:
		return num(e.Best)
	case ColAge:
		if e.Created.IsZero() {
			return "-"
		}
		return Age(m.now().Sub(e.Created))
	case ColTags:
		return strings.Join(e.Tags, ",")
	}
	return ""
}

func num(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.4f", x)
}

// Age is d in one short unit: 45s, 12m, 5h, 3d, 7w.
func Age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(0, int(d.Seconds())))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	case d < 14*24*time.Hour:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
	return fmt.Sprintf("%dw", int(d.Hours()/24/7))
}

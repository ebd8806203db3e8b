package workbench

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	tea "charm.land/bubbletea/v2"

	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/core/train"
	"selmix/tui/internal/fixture"
)

// recorder is a Controller that keeps what it was sent.
type recorder struct {
	mu  sync.Mutex
	got []loop.Control
}

func (r *recorder) Send(c loop.Control) {
	r.mu.Lock()
	r.got = append(r.got, c)
	r.mu.Unlock()
}

func (r *recorder) controls() []loop.Control {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]loop.Control(nil), r.got...)
}

func newRunning(t testing.TB, K, w, h int, ctl Controller) *Model {
	return newRunningColor(t, K, w, h, ctl, false)
}

func newRunningColor(t testing.TB, K, w, h int, ctl Controller, color bool) *Model {
	t.Helper()
	return newFrom(t, K, w, h, ctl, color, fixture.Running)
}

func newFrom(t testing.TB, K, w, h int, ctl Controller, color bool, snaps func(K, n int) []loop.Snapshot) *Model {
	t.Helper()
	m := New(Options{Info: fixture.Info(K), Ctl: ctl, Color: color, Forecast: train.Preview})
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	n := 8
	if K >= 1000 {
		n = 3 // G and P are 2×8 MB a refresh
	}
	for _, s := range snaps(K, n) {
		m.Update(SnapshotMsg{s})
	}
	return m
}

func press(m *Model, keys ...string) {
	for _, k := range keys {
		m.Update(fixture.Key(k))
	}
}

// screenCase is one golden screen: the workbench on a K-class run at
// w×h after keys.
type screenCase struct {
	name   string
	K      int
	w, h   int
	keys   []string
	worker bool // the trainer is a worker on a GPU
}

// goldenScreens compares each case's screen with its golden file.
func goldenScreens(t *testing.T, cases []screenCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			snaps := fixture.Running
			if c.worker {
				snaps = fixture.Worker
			}
			m := newFrom(t, c.K, c.w, c.h, &recorder{}, false, snaps)
			press(m, c.keys...)
			fixture.GoldenScreen(t, m.Render(), c.w, c.h)
		})
	}
}

func TestScreen(t *testing.T) {
	goldenScreens(t, []screenCase{
		{"80x24", 10, 80, 24, nil, false},
		{"80x24-heatmap-tab", 10, 80, 24, []string{"tab"}, false},
		{"80x24-curves-tab", 10, 80, 24, []string{"shift+tab", "shift+tab"}, false},
		{"120x36", 10, 120, 36, nil, false},
		{"120x36-s-lambda", 10, 120, 36, []string{"tab", "tab"}, false},
		{"120x40", 10, 120, 40, nil, false},
		{"120x40-k1000", 1000, 120, 40, nil, false},
		{"160x50", 10, 160, 50, nil, false},
		{"200x60", 10, 200, 60, nil, false},
		{"200x60-k100", 100, 200, 60, nil, false},
		{"help", 10, 100, 40, []string{"?"}, false},
		{"help-80x24", 10, 80, 24, []string{"?"}, false},
		{"objective-picker", 10, 80, 24, []string{"o", "down"}, false},
		{"edit-form-error", 10, 100, 30, []string{"e", "down", "down", "down", "down", "ctrl+u", "2", "enter"}, false},
		{"quit-confirm", 10, 80, 24, []string{"q"}, false},
		{"160x50-k1000", 1000, 160, 50, nil, false},
		{"160x50-k1000-worst", 1000, 160, 50, []string{"tab", "w"}, false},
		{"80x24-k1000", 1000, 80, 24, nil, false},
		{"80x24-k1000-search", 1000, 80, 24, []string{"/", "4", "2"}, false},
		{"80x24-k1000-heatmap", 1000, 80, 24, []string{"tab"}, false},
		{"80x24-k1000-lambda-by-gain", 1000, 80, 24, []string{"tab", "tab", "r", "r", "r"}, false},
	})
}

// The linear-step view, the worker console and the trainer's figures in
// the header, at both layouts and at K = 1000.
func TestScreenViews(t *testing.T) {
	goldenScreens(t, []screenCase{
		{"80x24-linear", 10, 80, 24, []string{"shift+tab", "shift+tab", "v"}, false},
		{"80x24-worker-console", 10, 80, 24, []string{"shift+tab", "c"}, true},
		{"160x50-worker-linear-console", 10, 160, 50, []string{"shift+tab", "c", "shift+tab", "v"}, true},
		{"160x50-k1000-linear", 1000, 160, 50, []string{"shift+tab", "shift+tab", "v"}, false},
		{"80x24-k1000-linear", 1000, 80, 24, []string{"shift+tab", "shift+tab", "v"}, false},
	})
}

func TestStates(t *testing.T) {
	m := New(Options{Info: fixture.Info(10), Ctl: &recorder{}})
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	if m.State() != Loading {
		t.Fatalf("new model state = %v, want loading", m.State())
	}
	if !strings.Contains(m.Render(), "starting the run") {
		t.Error("loading screen does not say the run is starting")
	}
	snaps := fixture.Running(10, 2)
	m.Update(SnapshotMsg{snaps[0]})
	if m.State() != Running {
		t.Fatalf("after a snapshot state = %v, want running", m.State())
	}
	m.Update(SnapshotMsg{fixture.Final(snaps[len(snaps)-1])})
	m.Update(ClosedMsg{})
	if m.State() != Finished {
		t.Fatalf("after close state = %v, want finished", m.State())
	}
	// Quitting a finished run needs no confirmation.
	if _, cmd := m.Update(fixture.Key("q")); cmd == nil || !m.Quit() {
		t.Error("q on a finished run did not quit")
	}

	e := New(Options{Info: fixture.Info(10), Ctl: &recorder{}})
	errSnap := snaps[1]
	errSnap.Kind, errSnap.State, errSnap.Err = loop.KindError, loop.Failed, "step 67: loss is NaN"
	e.Update(SnapshotMsg{errSnap})
	if e.State() != Failed {
		t.Fatalf("after an error snapshot state = %v, want error", e.State())
	}
	if v := e.Render(); !strings.Contains(v, "loss is NaN") {
		t.Errorf("error screen does not show the error:\n%s", v)
	}
	e.Update(ClosedMsg{})
	if e.State() != Failed {
		t.Errorf("closing after an error changed state to %v", e.State())
	}
}

func TestControls(t *testing.T) {
	// Every control the workbench sends is the researcher's (source user).
	set := func(k, v string) loop.Control {
		return loop.Control{Op: loop.OpSet, Key: k, Value: v, Source: loop.SourceUser}
	}
	cases := []struct {
		name string
		keys []string
		want []loop.Control
	}{
		{"pause", []string{"space"}, []loop.Control{{Op: loop.OpPause, Source: loop.SourceUser}}},
		{"s up twice compounds", []string{"+", "+"}, []loop.Control{set("s", "12.5"), set("s", "15.62")}},
		{"s down", []string{"-"}, []loop.Control{set("s", "8")}},
		{"policy", []string{"p", "down", "enter"}, []loop.Control{set("policy", "uniform")}},
		{"objective unchanged sends nothing", []string{"o", "enter"}, nil},
		{"objective", []string{"o", "up", "enter"}, []loop.Control{set("objective", "mean-recall")}},
		{"step needs pause", []string{"n"}, nil},
		{"form invalid sends nothing", []string{"e", "down", "down", "down", "down", "ctrl+u", "2", "enter"}, nil},
		{"form valid", []string{"e", "down", "down", "down", "down", "ctrl+u", "0", ".", "9", "enter"}, []loop.Control{set("alpha", "0.9")}},
		{"form cancel", []string{"e", "1", "esc"}, nil},
		{"fork not available", []string{"f"}, nil},
		{"quit asks first", []string{"q"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctl := &recorder{}
			m := newRunning(t, 10, 80, 24, ctl)
			press(m, c.keys...)
			got := ctl.controls()
			if len(got) != len(c.want) {
				t.Fatalf("keys %v sent %v, want %v", c.keys, got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("keys %v sent %v, want %v", c.keys, got, c.want)
				}
			}
		})
	}
}

func TestReadOnlySendsNothing(t *testing.T) {
	m := New(Options{Info: fixture.Info(10)})
	for _, s := range fixture.Running(10, 3) {
		m.Update(SnapshotMsg{s})
	}
	press(m, "space", "+", "o", "e")
	if m.dialogs.Len() != 0 {
		t.Errorf("read-only model opened dialog %s", m.dialogs.Top().ID())
	}
	if last := m.Run().Log[len(m.Run().Log)-1].Text; !strings.Contains(last, "read-only") {
		t.Errorf("last log line = %q, want a read-only note", last)
	}
	if _, cmd := m.Update(fixture.Key("q")); cmd == nil {
		t.Error("q on a read-only run did not quit at once")
	}
}

// The help of a read-only run lists no key that would change it (issue
// 26: `selmix open` listed pause, step, s, objective and fork).
func TestReadOnlyHelp(t *testing.T) {
	m := New(Options{Info: fixture.Info(10)})
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 40})
	for _, s := range fixture.Running(10, 3) {
		m.Update(SnapshotMsg{s})
	}
	press(m, "?")
	screen := m.Render()
	for _, gone := range []string{"pause / resume", "step to the next refresh", "s × 1.25", "s ÷ 1.25", "pick the objective", "pick the policy", "edit hyperparameters", "fork the run here"} {
		if strings.Contains(screen, gone) {
			t.Errorf("read-only help lists %q:\n%s", gone, screen)
		}
	}
	for _, want := range []string{"recorded run (read-only)", "quit", "next pane"} {
		if !strings.Contains(screen, want) {
			t.Errorf("read-only help lacks %q:\n%s", want, screen)
		}
	}
}

// Every size, including tiny ones, must fill the screen exactly.
func TestResize(t *testing.T) {
	m := newRunning(t, 10, 80, 24, &recorder{})
	for _, sz := range [][2]int{{20, 8}, {40, 12}, {80, 24}, {120, 40}, {139, 40}, {140, 39}, {140, 40}, {250, 80}} {
		m.Update(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
		fixture.CheckBox(t, m.Render(), sz[0], sz[1])
	}
}

// K = 1000 with the heatmap zoomed and a class found: every size still
// fills the screen exactly, and keys at tiny sizes do not panic.
func TestResizeK1000(t *testing.T) {
	m := newRunning(t, 1000, 160, 50, &recorder{})
	press(m, "/", "7", "enter", "tab", "w")
	for _, sz := range [][2]int{{20, 8}, {40, 12}, {80, 24}, {120, 40}, {160, 50}, {250, 80}} {
		m.Update(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
		press(m, "j", "l", "t", "esc", "z", "a", "w", "a")
		fixture.CheckBox(t, m.Render(), sz[0], sz[1])
	}
}

// Attached to a run in another process, quit offers detach: d leaves the
// run going and sends nothing; y stops it (the caller sends the stop).
func TestQuitAttached(t *testing.T) {
	for _, c := range []struct {
		keys     []string
		detached bool
	}{
		{[]string{"q", "d"}, true},
		{[]string{"q", "y"}, false},
		{[]string{"q", "ctrl+c"}, true},
	} {
		rec := &recorder{}
		m := New(Options{Info: fixture.Info(10), Ctl: rec, Attached: true})
		m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
		for _, s := range fixture.Running(10, 3) {
			m.Update(SnapshotMsg{s})
		}
		press(m, c.keys[:1]...)
		if v := m.Render(); !strings.Contains(v, "d detach") {
			t.Errorf("%v: attached quit dialog does not offer detach:\n%s", c.keys, v)
		}
		press(m, c.keys[1:]...)
		if !m.Quit() || m.Detached() != c.detached {
			t.Errorf("%v: quit %v detached %v, want true %v", c.keys, m.Quit(), m.Detached(), c.detached)
		}
		if len(rec.got) != 0 {
			t.Errorf("%v: the model sent %v itself", c.keys, rec.got)
		}
	}
	// In-process, d does nothing: there is nothing to detach from.
	m := newRunning(t, 10, 80, 24, &recorder{})
	press(m, "q", "d")
	if m.Quit() || m.Detached() {
		t.Error("d quit an in-process workbench")
	}
}

// R leaves for the runs browser where leaving does not stop the run: an
// attached run goes on (detached), a recorded one just closes; in-process
// it only says why not.
func TestBrowseKey(t *testing.T) {
	rec := &recorder{}
	m := New(Options{Info: fixture.Info(10), Ctl: rec, Attached: true})
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	for _, s := range fixture.Running(10, 3) {
		m.Update(SnapshotMsg{s})
	}
	press(m, "R")
	if !m.Quit() || !m.Detached() || !m.Browse() || len(rec.got) != 0 {
		t.Errorf("attached: quit %v detached %v browse %v sent %v; want quit, detached, browse, nothing sent", m.Quit(), m.Detached(), m.Browse(), rec.got)
	}
	ro := New(Options{Info: fixture.Info(10)})
	ro.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	press(ro, "R")
	if !ro.Quit() || !ro.Browse() {
		t.Errorf("read-only: quit %v browse %v, want both", ro.Quit(), ro.Browse())
	}
	in := newRunning(t, 10, 80, 24, &recorder{})
	press(in, "R")
	if in.Quit() || in.Browse() {
		t.Error("R left an in-process workbench (that would stop its run)")
	}
}

// f opens the fork form and x exports; both run the caller's work off
// the UI loop (as commands) and log what they report. The fork gets the
// step on screen and no overrides when nothing in the form changed.
func TestForkAndExportKeys(t *testing.T) {
	forkedAt, forkSets := "unset", []string{"unset"}
	m := New(Options{Info: fixture.Info(10), Ctl: &recorder{},
		Fork: func(at string, sets []string) (string, error) {
			forkedAt, forkSets = at, sets
			return "forked as run X", nil
		},
		Export: func() (string, error) { return "", errors.New("export: disk full") },
	})
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	for _, s := range fixture.Running(10, 3) {
		m.Update(SnapshotMsg{s})
	}
	if _, cmd := m.Update(fixture.Key("f")); cmd != nil || m.dialogs.Top() == nil || m.dialogs.Top().ID() != forkID {
		t.Fatalf("f did not open the fork form (cmd %v)", cmd)
	}
	for _, c := range []struct{ key, want string }{{"enter", "forked as run X"}, {"x", "export: disk full"}} {
		_, cmd := m.Update(fixture.Key(c.key))
		if cmd == nil {
			t.Fatalf("%s returned no command", c.key)
		}
		m.Update(cmd())
		if last := m.run.Log[len(m.run.Log)-1].Text; last != c.want {
			t.Errorf("%s: last log line %q, want %q", c.key, last, c.want)
		}
	}
	if forkedAt != strconv.Itoa(m.run.Latest.Step) || len(forkSets) != 0 {
		t.Errorf("forked at %q with %q, want the current step %d and no overrides", forkedAt, forkSets, m.run.Latest.Step)
	}
}

// The fork form is prefilled with the run's settings; what is changed
// becomes the fork's overrides, a bad value keeps the form open with its
// error, and esc forks nothing (issue 26: f silently started a fork).
// Its last field says where the fork starts: the current step unless
// changed, an earlier step, or best (as `selmix fork --at best`).
func TestForkForm(t *testing.T) {
	cases := []struct {
		name string
		keys []string
		want []string // nil: no fork
		open bool     // the form is still open
		at   string   // where the fork starts ("": the current step)
	}{
		{"esc cancels", []string{"f", "esc"}, nil, false, ""},
		{"name and objective", []string{"f", "t", "r", "y", "down", "ctrl+u", "h", "m", "e", "a", "n", "enter"},
			[]string{"name=try", "finetune.objective=hmean"}, false, ""},
		{"s and steps", []string{"f", "down", "down", "down", "ctrl+u", "2", "0", "down", "down", "ctrl+u", "4", "0", "0", "0", "enter"},
			[]string{"finetune.s=20", "finetune.steps=4000"}, false, ""},
		{"bad objective stays open", []string{"f", "down", "ctrl+u", "m", "i", "n", "enter"}, nil, true, ""},
		{"steps before the fork stay open", []string{"f", "down", "down", "down", "down", "down", "ctrl+u", "5", "enter"}, nil, true, ""},
		{"at best", []string{"f", "up", "ctrl+u", "b", "e", "s", "t", "enter"}, []string{}, false, "best"},
		{"at best with s", []string{"f", "up", "ctrl+u", "b", "e", "s", "t", "down", "down", "down", "down", "ctrl+u", "5", "enter"},
			[]string{"finetune.s=5"}, false, "best"},
		{"at an earlier step", []string{"f", "up", "ctrl+u", "1", "0", "0", "enter"}, []string{}, false, "100"},
		{"at a later step stays open", []string{"f", "up", "ctrl+u", "9", "9", "9", "9", "enter"}, nil, true, ""},
		{"at a bad word stays open", []string{"f", "up", "ctrl+u", "b", "e", "s", "enter"}, nil, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			forked, gotAt := false, ""
			ctl := &recorder{}
			m := New(Options{Info: fixture.Info(10), Ctl: ctl, Fork: func(at string, sets []string) (string, error) {
				forked, got, gotAt = true, sets, at
				return "ok", nil
			}})
			m.Update(tea.WindowSizeMsg{Width: 120, Height: 36})
			for _, s := range fixture.Running(10, 3) {
				m.Update(SnapshotMsg{s})
			}
			for _, k := range c.keys {
				if _, cmd := m.Update(fixture.Key(k)); cmd != nil {
					m.Update(cmd())
				}
			}
			if forked != (c.want != nil) || strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Errorf("forked %v with %q, want %q", forked, got, c.want)
			}
			if wantAt := cmp.Or(c.at, strconv.Itoa(m.run.Latest.Step)); forked && gotAt != wantAt {
				t.Errorf("forked at %q, want %q", gotAt, wantAt)
			}
			if open := m.dialogs.Has(forkID); open != c.open {
				t.Errorf("form open = %v, want %v:\n%s", open, c.open, m.Render())
			}
			if len(ctl.controls()) != 0 {
				t.Errorf("the fork form sent controls to the running run: %v", ctl.controls())
			}
		})
	}
}

// A recorded run's G and P arrive after its history: Init starts the
// load, its message fills in the current refresh, and a failure is said
// in the event log.
func TestLoadMatrices(t *testing.T) {
	snaps := fixture.Running(10, 3)
	last := snaps[len(snaps)-1].Refresh
	bare := make([]loop.Snapshot, len(snaps))
	for i, s := range snaps {
		if s.Refresh != nil {
			rs := *s.Refresh
			rs.G, rs.P = nil, nil
			s.Refresh = &rs
		}
		bare[i] = s
	}
	calls := 0
	m := New(Options{Info: fixture.Info(10), LoadMatrices: func() MatricesMsg {
		calls++
		return MatricesMsg{Step: last.Step, G: last.G, P: last.P, Note: "G and P from disk"}
	}})
	cmd := m.Init()
	if cmd == nil {
		t.Fatal("Init starts no load")
	}
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 50})
	m.Update(SnapshotsMsg(bare))
	if m.Run().Cur.G != nil {
		t.Fatal("G present before the load")
	}
	if v := m.View().Content; !strings.Contains(v, "loading G/P") {
		t.Errorf("before the load the screen does not say it waits for G and P:\n%s", v)
	}
	m.Update(cmd())
	if calls != 1 || m.Run().Cur.G == nil || m.Run().Cur.G[5] != last.G[5] {
		t.Errorf("after the load: %d calls, G %v", calls, m.Run().Cur.G)
	}
	// The pane shows them: no "loading" left on the screen.
	if v := m.View().Content; strings.Contains(v, "loading G/P") || !strings.Contains(v, "P = softmax(s·G)") {
		t.Errorf("after the load the screen still waits for G and P:\n%s", v)
	}
	if log := m.Run().Log; log[len(log)-1].Text != "G and P from disk" {
		t.Errorf("note not logged: %+v", log[len(log)-1])
	}
	m2 := New(Options{Info: fixture.Info(10), LoadMatrices: func() MatricesMsg { return MatricesMsg{Err: errors.New("arrays.bin: gone")} }})
	m2.Update(SnapshotsMsg(bare))
	m2.Update(m2.Init()())
	if log := m2.Run().Log; !strings.Contains(log[len(log)-1].Text, "arrays.bin: gone") || m2.State() == Failed {
		t.Errorf("a failed load: last log %+v, state %v; want a warning, not a failure", log[len(log)-1], m2.State())
	}
	if New(Options{Info: fixture.Info(10)}).Init() != nil {
		t.Error("Init without a loader starts something")
	}
}

// From 120×36 up every pane is on screen at once (s·λ and the curves
// share a row: the focused one shows), nothing is cut at 160×50, and the
// footer names the focused pane's own keys (issue 26: 120×40 fell back
// to tabs; the curves legend read "pre-trained 0…").
func TestLayout(t *testing.T) {
	for _, sz := range [][2]int{{120, 36}, {120, 40}, {140, 42}, {160, 50}} {
		m := newRunning(t, 10, sz[0], sz[1], &recorder{})
		screen := m.Render()
		if strings.Contains(screen, "tab/shift+tab switch") {
			t.Errorf("%dx%d: tabs, want the split layout:\n%s", sz[0], sz[1], screen)
		}
		// The events show at least 3 lines (at 120×36 they had one), and
		// every class has its row in both panes of the top row.
		lines := strings.Split(screen, "\n")
		top := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "┌─ events") })
		if end := slices.IndexFunc(lines[top+1:], func(l string) bool { return strings.HasPrefix(l, "└") }); top < 0 || end < 3 {
			t.Errorf("%dx%d: the events pane shows %d lines, want 3:\n%s", sz[0], sz[1], end, screen)
		}
		for c, name := range []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"} {
			row := regexp.MustCompile(`│[▶ ] ` + regexp.QuoteMeta(name) + ` .*││` + strconv.Itoa(c) + " " + regexp.QuoteMeta(name[:3]) + " ")
			if !row.MatchString(screen) {
				t.Errorf("%dx%d: class %d %s has no row in recall & coverage and G·P:\n%s", sz[0], sz[1], c, name, screen)
			}
		}
		for _, want := range []string{"recall & coverage", "gain G · mixup P", "objectives", "events", "⠉ pre-trained 0.6495", "│ classes: r sort  / find class │"} {
			if !strings.Contains(screen, want) {
				t.Errorf("%dx%d: no %q on screen:\n%s", sz[0], sz[1], want, screen)
			}
		}
		// Every objective has its row in the curves' table (at 120×36 the
		// last one was cut).
		for _, o := range metric.Objectives() {
			row := regexp.MustCompile(regexp.QuoteMeta(fmt.Sprintf("%-19s", o)) + ` +-?\d\.\d{4} [+-]\d\.\d{4}`)
			if !row.MatchString(screen) {
				t.Errorf("%dx%d: no row for objective %s in the curves' table:\n%s", sz[0], sz[1], o, screen)
			}
		}
		press(m, "tab", "tab")
		if screen := m.Render(); !strings.Contains(screen, "s and λ") || !strings.Contains(screen, "│ s·λ: +/- s  r sort") {
			t.Errorf("%dx%d: focusing s·λ does not show it and its keys:\n%s", sz[0], sz[1], screen)
		}
		press(m, "tab")
		if screen := m.Render(); !strings.Contains(screen, "│ curves: [ less smoothing  ] more smoothing  v predicted/realised │") {
			t.Errorf("%dx%d: the curves' keys are not in the footer:\n%s", sz[0], sz[1], screen)
		}
	}
	m := newRunning(t, 10, 160, 50, &recorder{})
	for i := range nPanes {
		for _, l := range strings.Split(m.Render(), "\n") {
			// A cut line ends in "…" just inside its frame.
			if strings.HasSuffix(strings.TrimRight(l, " "), "…│") || strings.Contains(l, "…││") {
				t.Errorf("pane %d focused: a line is cut at 160x50: %q", i, l)
			}
		}
		press(m, "tab")
	}
}

// One key, one meaning: the footer never shows a key that is also the
// name of a setting it changes (issue 26: "+/- s" beside "s sort").
func TestFooterKeysDistinct(t *testing.T) {
	m := newRunning(t, 10, 160, 50, &recorder{})
	for range nPanes {
		lines := strings.Split(m.Render(), "\n")
		footer := lines[len(lines)-1]
		if strings.Contains(footer, "+/- s") && strings.Contains(footer, "  s ") {
			t.Errorf("the footer shows s as a key and as the setting +/- changes: %q", footer)
		}
		press(m, "tab")
	}
}

// The fork form at 120×36 fits on screen: no line of it is cut.
func TestForkFormFits(t *testing.T) {
	m := New(Options{Info: fixture.Info(10), Ctl: &recorder{}, Fork: func(string, []string) (string, error) { return "", nil }})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 36})
	for _, s := range fixture.Running(10, 3) {
		m.Update(SnapshotMsg{s})
	}
	press(m, "f", "down", "ctrl+u", "x", "enter")
	screen := m.Render()
	if !strings.Contains(screen, "fork at the checkpoint at or before step") || !strings.Contains(screen, "✗ ") {
		t.Fatalf("no fork form with the refusal of objective x:\n%s", screen)
	}
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, "…│") {
			t.Errorf("a line of the fork form is cut: %q", l)
		}
	}
}

// A finished run's footer shows only what still works, f to fork or
// extend it; a control says so, and the fork form offers to extend the
// run (issue #37: every control said "the run has ended" while the
// footer still advertised them).
func TestFinishedOffersForkOrExtend(t *testing.T) {
	var forkSets []string
	m := New(Options{Info: fixture.Info(10), Ctl: &recorder{},
		Fork: func(at string, sets []string) (string, error) { forkSets = sets; return "forked as run X", nil }})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 36})
	snaps := fixture.Running(10, 3)
	for _, s := range snaps {
		m.Update(SnapshotMsg{s})
	}
	if bar := m.helpBar(); !strings.Contains(bar, "space pause") {
		t.Fatalf("a running run's footer: %q", bar)
	}
	fin := fixture.Final(snaps[len(snaps)-1])
	fin.Step, fin.Total = 200, 200
	m.Update(SnapshotMsg{fin})
	m.Update(ClosedMsg{})
	bar := m.helpBar()
	for _, dead := range []string{"pause", "step", "objective", "policy", "edit"} {
		if strings.Contains(bar, dead) {
			t.Errorf("a finished run's footer offers %q: %q", dead, bar)
		}
	}
	if !strings.Contains(bar, "f fork or extend") {
		t.Errorf("a finished run's footer: %q, want f fork or extend", bar)
	}
	press(m, "space")
	if last := m.run.Log[len(m.run.Log)-1].Text; !strings.Contains(last, "the run has ended: f forks it from here with a change, or more steps to extend it") {
		t.Errorf("space on a finished run says %q", last)
	}
	press(m, "f")
	if m.dialogs.Top() == nil || m.dialogs.Top().ID() != forkID {
		t.Fatal("f did not open the fork form")
	}
	_, cmd := m.Update(fixture.Key("enter"))
	if cmd == nil {
		t.Fatal("enter forked nothing")
	}
	m.Update(cmd())
	if !slices.Contains(forkSets, "finetune.steps=400") {
		t.Errorf("the fork of a finished run: %q, want finetune.steps=400 (extended)", forkSets)
	}
}

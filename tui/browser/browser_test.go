package browser

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"selmix/tui/internal/fixture"
)

// epoch is the clock of every test: runs are made before it.
var epoch = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

type fakeRun struct {
	id, name, status, objective, policy string
	steps                               int
	best                                float64 // NaN: no refresh yet
	final                               float64 // NaN: no summary
	age                                 time.Duration
	tags                                []string
	lr                                  string
}

// writeRun writes the files the browser reads, as a run writes them.
func writeRun(t testing.TB, root string, r fakeRun) {
	t.Helper()
	dir := filepath.Join(root, r.id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	meta := map[string]any{
		"format": 2, "id": r.id, "name": r.name, "created": epoch.Add(-r.age).Format(time.RFC3339),
		"status": r.status, "objective": r.objective, "policy": r.policy, "steps": r.steps, "best_step": -1,
	}
	if !math.IsNaN(r.best) {
		meta["best"], meta["best_step"] = r.best, r.steps
	}
	if r.tags != nil {
		meta["tags"] = r.tags
	}
	b, _ := json.Marshal(meta)
	must(t, os.WriteFile(filepath.Join(dir, "run.json"), b, 0o644))
	cfg := fmt.Sprintf("name = %q\nseed = 1\n\n[finetune]\npolicy = %q\nobjective = %q\nlr = %s\nsteps = %d\n", r.name, r.policy, r.objective, r.lr, r.steps)
	must(t, os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o644))
	if !math.IsNaN(r.final) {
		s := fmt.Sprintf(`{"steps": %d, "objective": %q, "test_objectives_after": {%q: %g, "gmean": 0.5}}`, r.steps, r.objective, r.objective, r.final)
		must(t, os.WriteFile(filepath.Join(dir, "summary.json"), []byte(s), 0o644))
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

var nan = math.NaN()

// fiveRuns is a small root: finished, stopped, crashed and fresh runs.
func fiveRuns(t testing.TB) string {
	root := t.TempDir()
	for _, r := range []fakeRun{
		{"20261120-0900-aaaa", "baseline", "finished", "mean-recall", "selmix", 300, 0.7412, 0.7301, 75 * time.Hour, []string{"paper"}, "0.01"},
		{"20261121-1000-bbbb", "uniform-a", "finished", "min-recall", "uniform", 300, 0.4123, 0.4001, 50 * time.Hour, nil, "0.01"},
		{"20261122-1100-cccc", "uniform-b", "stopped", "min-recall", "uniform", 150, 0.3877, nan, 25 * time.Hour, []string{"ablation", "lr"}, "0.1"},
		{"20261123-1130-dddd", "crashy\x1b[31m", "running", "hmean", "selmix", 40, 0.2, nan, 30 * time.Minute, nil, "0.01"},
		{"20261123-1159-eeee", "", "running", "mean-recall@cov", "greedy", 0, nan, nan, 40 * time.Second, nil, "0.01"},
	} {
		writeRun(t, root, r)
	}
	return root
}

func newModel(root string) *Model {
	return New(fixture.Plain(), root, WithClock(func() time.Time { return epoch }), WithoutRefresh())
}

// loaded is a model of root with the list and the configs read, sized
// w×h.
func loaded(t testing.TB, root string, w, h int) *Model {
	t.Helper()
	m := newModel(root)
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	drain(m, m.Init())
	return m
}

// drain runs cmd and what the messages it brings back ask for, as the
// program would (the models under test never tick).
func drain(m *Model, cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	switch msg := cmd().(type) {
	case tea.BatchMsg:
		for _, c := range msg {
			drain(m, c)
		}
	default:
		_, next := m.Update(msg)
		drain(m, next)
	}
}

func typeText(m *Model, s string) {
	for _, r := range s {
		m.Update(fixture.Key(string(r)))
	}
}

func ids(es []Row) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

func TestRead(t *testing.T) {
	es, err := Read(fiveRuns(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 5 {
		t.Fatalf("got %d rows, want 5", len(es))
	}
	byID := map[string]Row{}
	for _, e := range es {
		byID[e.ID] = e
	}
	a := byID["20261120-0900-aaaa"]
	if a.Status != "finished" || a.Best != 0.7412 || a.Final != 0.7301 || a.Steps != 300 || !slices.Equal(a.Tags, []string{"paper"}) {
		t.Errorf("finished run: got %+v", a)
	}
	if a.Config != nil {
		t.Errorf("Read read config.toml: %v", a.Config)
	}
	cs := ReadConfigs(map[string]string{a.ID: a.Dir, "gone": filepath.Join(t.TempDir(), "gone")})
	if got := cs[a.ID]["finetune.lr"]; got != "0.01" {
		t.Errorf("config finetune.lr = %q, want 0.01", got)
	}
	if c, ok := cs["gone"]; !ok || len(c) != 0 {
		t.Errorf("a run without config.toml: %v %v, want an empty config", c, ok)
	}
	c := byID["20261122-1100-cccc"]
	if c.Status != "stopped" || !math.IsNaN(c.Final) {
		t.Errorf("stopped run: status %q final %v, want stopped NaN", c.Status, c.Final)
	}
	d := byID["20261123-1130-dddd"]
	if d.Status != "crashed" {
		t.Errorf("running run with no writer: status %q, want crashed", d.Status)
	}
	if d.Name != "crashy" { // safetext.Line drops the escape sequence
		t.Errorf("name not cleaned: %q, want crashy", d.Name)
	}
	e := byID["20261123-1159-eeee"]
	if !math.IsNaN(e.Best) {
		t.Errorf("run with no refresh: best %v, want NaN", e.Best)
	}
}

func TestFilter(t *testing.T) {
	root := fiveRuns(t)
	cases := []struct {
		filter string
		want   []string // ids, newest first (the default order)
	}{
		{"", []string{"20261123-1159-eeee", "20261123-1130-dddd", "20261122-1100-cccc", "20261121-1000-bbbb", "20261120-0900-aaaa"}},
		{"policy=uniform", []string{"20261122-1100-cccc", "20261121-1000-bbbb"}},
		{"policy=uniform objective~recall", []string{"20261122-1100-cccc", "20261121-1000-bbbb"}},
		{"objective~recall", []string{"20261123-1159-eeee", "20261122-1100-cccc", "20261121-1000-bbbb", "20261120-0900-aaaa"}},
		{"objective=mean-recall", []string{"20261120-0900-aaaa"}},
		{"lr=0.1", []string{"20261122-1100-cccc"}},
		{"finetune.lr=0.01 status=finished", []string{"20261121-1000-bbbb", "20261120-0900-aaaa"}},
		{"tag=paper", []string{"20261120-0900-aaaa"}},
		{"ABLATION", []string{"20261122-1100-cccc"}},
		{"uniform crashed", nil},
		{"nosuchkey=1", nil},
	}
	for _, c := range cases {
		t.Run(c.filter, func(t *testing.T) {
			m := loaded(t, root, 120, 30)
			m.Update(fixture.Key("/"))
			typeText(m, c.filter)
			m.Update(fixture.Key("enter"))
			if got := ids(m.Rows()); !slices.Equal(got, c.want) {
				t.Errorf("filter %q: got %v, want %v", c.filter, got, c.want)
			}
		})
	}
}

func TestSort(t *testing.T) {
	m := loaded(t, fiveRuns(t), 120, 30)
	sortBy := func(c Column) {
		for range nColumns {
			if m.sortBy == c {
				return
			}
			m.Update(fixture.Key("r"))
		}
		t.Fatalf("r never sorts by %v", c)
	}
	sortBy(ColName)
	if got, want := ids(m.Rows()), []string{"20261123-1159-eeee", "20261120-0900-aaaa", "20261123-1130-dddd", "20261121-1000-bbbb", "20261122-1100-cccc"}; !slices.Equal(got, want) {
		t.Errorf("by name: got %v, want %v", got, want)
	}
	sortBy(ColBest) // highest first, runs without one last
	if got, want := ids(m.Rows()), []string{"20261120-0900-aaaa", "20261121-1000-bbbb", "20261122-1100-cccc", "20261123-1130-dddd", "20261123-1159-eeee"}; !slices.Equal(got, want) {
		t.Errorf("by best: got %v, want %v", got, want)
	}
	m.Update(fixture.Key("S"))
	if got, want := ids(m.Rows()), []string{"20261123-1159-eeee", "20261123-1130-dddd", "20261122-1100-cccc", "20261121-1000-bbbb", "20261120-0900-aaaa"}; !slices.Equal(got, want) {
		t.Errorf("by best, reversed: got %v, want %v", got, want)
	}
}

func TestMarkOpenCompare(t *testing.T) {
	m := loaded(t, fiveRuns(t), 120, 30)
	m.Update(fixture.Key("c"))
	if a, _ := m.Chosen(); a != None || m.note == "" {
		t.Fatalf("c with nothing marked: action %v, note %q; want none and a note", a, m.note)
	}
	// Mark the 2nd and 4th (space moves down), then compare.
	m.Update(fixture.Key("j"))
	m.Update(fixture.Key("space"))
	m.Update(fixture.Key("j"))
	m.Update(fixture.Key("space"))
	if got, want := m.Marked(), []string{"20261123-1130-dddd", "20261121-1000-bbbb"}; !slices.Equal(got, want) {
		t.Fatalf("marked %v, want %v", got, want)
	}
	_, cmd := m.Update(fixture.Key("c"))
	if a, got := m.Chosen(); a != Compare || !slices.Equal(got, []string{"20261123-1130-dddd", "20261121-1000-bbbb"}) || cmd == nil {
		t.Errorf("compare: got %v %v (quit %v)", a, got, cmd != nil)
	}
	// Coming back: Init forgets the choice, marks stay; Enter opens the
	// selected run, the one after the last marked (space moves down).
	drain(m, m.Init())
	if a, _ := m.Chosen(); a != None {
		t.Errorf("after Init the action is %v, want none", a)
	}
	if len(m.Marked()) != 2 {
		t.Errorf("marks lost on re-read: %v", m.Marked())
	}
	m.Update(fixture.Key("enter"))
	if a, got := m.Chosen(); a != Open || !slices.Equal(got, []string{"20261120-0900-aaaa"}) {
		t.Errorf("enter: got %v %v, want open of the selected run", a, got)
	}
}

func TestView(t *testing.T) {
	root := fiveRuns(t)
	cases := []struct {
		name string
		keys []string
		w, h int
	}{
		{"list-80x24", nil, 80, 24},
		{"list-160x50", nil, 160, 50},
		{"filtered-80x24", []string{"/", "p", "o", "l", "i", "c", "y", "=", "u", "n", "i", "f", "o", "r", "m"}, 80, 24},
		{"marked-sorted-160x50", []string{"j", "space", "space", "r", "r", "r", "r", "r", "r"}, 160, 50},
		{"no-match-80x24", []string{"/", "z", "z", "enter"}, 80, 24},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := loaded(t, root, c.w, c.h)
			m.root = "runs" // the temp dir's name differs per run
			for i := range m.all {
				m.all[i].Dir = filepath.Join("runs", m.all[i].ID)
			}
			for _, k := range c.keys {
				m.Update(fixture.Key(k))
			}
			fixture.GoldenScreen(t, m.Render(), c.w, c.h)
		})
	}
}

func TestViewLoading(t *testing.T) {
	m := newModel("runs")
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	fixture.GoldenScreen(t, m.Render(), 80, 24)
}

// thousand builds a root of n runs: three policies, four objectives,
// a tenth of them tagged.
func thousand(t testing.TB, n int) string {
	root := t.TempDir()
	pols := []string{"selmix", "uniform", "greedy"}
	objs := []string{"mean-recall", "min-recall", "hmean", "mean-recall@cov"}
	for i := range n {
		r := fakeRun{
			id: fmt.Sprintf("20261101-%04d-%04x", i, i), name: fmt.Sprintf("run-%04d", i), status: "finished",
			objective: objs[i%len(objs)], policy: pols[i%len(pols)], steps: 100 + i,
			best: float64(i%97) / 97, final: float64(i%89) / 89, age: time.Duration(n-i) * time.Minute, lr: "0.01",
		}
		if i%10 == 0 {
			r.tags = []string{"tenth"}
		}
		if i%7 == 0 {
			r.final = nan
			r.status = "stopped"
		}
		writeRun(t, root, r)
	}
	return root
}

// TestThousandRuns lists, filters and sorts a root of 1,000 runs.
func TestThousandRuns(t *testing.T) {
	root := thousand(t, 1000)
	m := loaded(t, root, 160, 50)
	if len(m.all) != 1000 || len(m.view) != 1000 {
		t.Fatalf("listed %d, shown %d; want 1000", len(m.all), len(m.view))
	}
	m.Update(fixture.Key("/"))
	typeText(m, "policy=uniform tag=tenth")
	// Uniform is i%3 == 1, tagged is i%10 == 0: i ≡ 10 (mod 30).
	if got := len(m.Rows()); got != 33 {
		t.Errorf("policy=uniform tag=tenth shows %d runs, want 33", got)
	}
	for _, e := range m.Rows() {
		if e.Policy != "uniform" || !slices.Contains(e.Tags, "tenth") {
			t.Errorf("%s passed the filter: policy %s tags %v", e.ID, e.Policy, e.Tags)
		}
	}
	fixture.CheckBox(t, m.Render(), 160, 50)
}

// BenchmarkFirstFrame is `selmix runs` opening on a root of 1,000 runs:
// the list read and the first frame drawn (target ≤ 0.5 s); the configs
// follow in a second read.
func BenchmarkFirstFrame(b *testing.B) {
	root := thousand(b, 1000)
	b.ResetTimer()
	for b.Loop() {
		m := newModel(root)
		m.Update(tea.WindowSizeMsg{Width: 160, Height: 50})
		m.Update(m.Init()())
		_ = m.Render()
	}
}

// BenchmarkFilterKey is one keystroke in the filter over 1,000 runs: the
// filter applied and the frame drawn (target ≤ 50 ms).
func BenchmarkFilterKey(b *testing.B) {
	m := loaded(b, thousand(b, 1000), 160, 50)
	m.Update(fixture.Key("/"))
	typeText(m, "policy=unifor")
	b.ResetTimer()
	for b.Loop() {
		m.Update(fixture.Key("m"))
		_ = m.Render()
		m.Update(fixture.Key("backspace"))
	}
}

// The list comes first and the configs after it: a filter on a config
// key typed meanwhile applies as soon as they arrive.
func TestConfigsArriveLater(t *testing.T) {
	m := newModel(fiveRuns(t))
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	_, cmd := m.Update(m.Init()())
	m.Update(fixture.Key("/"))
	typeText(m, "lr=0.1")
	if got := ids(m.Rows()); len(got) != 0 {
		t.Fatalf("before the configs: %v shown, want none", got)
	}
	if cmd == nil {
		t.Fatal("the list asked for no configs")
	}
	drain(m, cmd)
	if got, want := ids(m.Rows()), []string{"20261122-1100-cccc"}; !slices.Equal(got, want) {
		t.Errorf("after the configs: %v, want %v", got, want)
	}
}

// A name cut to fit keeps its end, where names of one experiment differ
// (issue #37: at 80 columns min-recall-selmix-fork-2 and -fork-3 read
// the same).
func TestElideMiddle(t *testing.T) {
	for _, tt := range []struct {
		name string
		w    int
		want string
	}{
		{"min-recall-selmix-fork-2", 12, "min…x-fork-2"},
		{"min-recall-selmix-fork-3", 12, "min…x-fork-3"},
		{"short", 12, "short"},
	} {
		if got := elideMiddle(tt.name, tt.w); got != tt.want {
			t.Errorf("elideMiddle(%q, %d) = %q, want %q", tt.name, tt.w, got, tt.want)
		}
	}
}

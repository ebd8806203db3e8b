package classlist

import (
	"slices"
	"testing"

	"charm.land/bubbles/v2/key"

	"selmix/core/metric"
	"selmix/tui/internal/fixture"
	"selmix/tui/runstate"
)

// Sync reports a change once per refresh, and again when the refresh's
// G arrives: as a new value (SetMatrices) or filled in place.
func TestPaneSync(t *testing.T) {
	full := fixture.Refresh(100, 1, 2000, metric.MinRecall)
	run := runstate.New(fixture.Info(100))
	p := NewPane(fixture.Plain(), run)
	if p.Sync() || p.RS != nil {
		t.Fatalf("before any refresh: Sync reported a change, RS %v", p.RS)
	}
	none := func() {}
	for _, step := range []struct {
		name   string
		change func()
		want   bool
	}{
		{"first refresh", func() { run.Apply(fixture.Refresh(100, 0, 2000, metric.MinRecall)) }, true},
		{"same refresh", none, false},
		{"a refresh without G", func() { run.Apply(fixture.WithoutGP(full)) }, true},
		{"still without G", none, false},
		{"its G loaded", func() { run.SetMatrices(full.Step, full.Refresh.G, full.Refresh.P) }, true},
		{"same again", none, false},
		{"the next without G", func() { run.Apply(fixture.WithoutGP(fixture.Refresh(100, 2, 2000, metric.MinRecall))) }, true},
		{"its G filled in place", func() { run.Cur.G = full.Refresh.G }, true},
		{"same at last", none, false},
	} {
		step.change()
		if got := p.Sync(); got != step.want || p.RS != run.Cur {
			t.Errorf("%s: Sync() = %v (RS is the run's: %v), want %v", step.name, got, p.RS == run.Cur, step.want)
		}
	}
}

// Keys: sorted, the Nav takes the sort and search keys and a search's
// jump scrolls to the row; unsorted, they do nothing and only the
// scroll keys move.
func TestPaneKeys(t *testing.T) {
	run := fixture.Run(1000, 2)
	newPane := func() *Pane {
		p := NewPane(fixture.Plain(), run)
		p.SetSize(60, 12) // 10 rows
		p.Sync()
		p.Nav.Refresh(p.RS, run)
		return &p
	}
	p := newPane()
	if !p.Keys(fixture.Key("r"), 1000, true) || p.Nav.By() != ByCoverage {
		t.Errorf("sorted: the sort key went to the Nav? order %q, want by coverage", p.Nav.By())
	}
	for _, k := range []string{"/", "5", "0", "0"} {
		p.Keys(fixture.Key(k), 1000, true)
	}
	if !p.Capturing() {
		t.Fatal("the search prompt is not open")
	}
	p.Keys(fixture.Key("enter"), 1000, true)
	row := slices.Index(p.Nav.Order, 500)
	if lo, _ := p.Scroll.Window(1000, p.Rows()); lo != min(row, 1000-10) || p.Nav.Found != 500 {
		t.Errorf("after /500 the window starts at %d, found %d; want class 500's row %d, found 500", lo, p.Nav.Found, row)
	}
	if p.Keys(fixture.Key("j"), 1000, true) {
		t.Error("the Nav took a scroll key")
	}

	u := newPane()
	if u.Keys(fixture.Key("r"), 1000, false) || u.Keys(fixture.Key("/"), 1000, false) || u.Capturing() || u.Nav.By() != ByRecall {
		t.Errorf("unsorted: sort or search reached the Nav (order %q, capturing %v)", u.Nav.By(), u.Capturing())
	}
	u.Keys(fixture.Key("j"), 1000, false)
	u.Keys(fixture.Key("j"), 1000, false)
	if lo, _ := u.Scroll.Window(1000, u.Rows()); lo != 2 {
		t.Errorf("unsorted: after two downs the window starts at %d, want 2", lo)
	}
}

// Help: the prompt's keys while it is open, the sort and search keys
// after the pane's own only when sorted.
func TestPaneHelp(t *testing.T) {
	run := fixture.Run(100, 2)
	p := NewPane(fixture.Plain(), run)
	p.Sync()
	p.Nav.Refresh(p.RS, run)
	k := p.Ctx.Keys
	names := func(bs []key.Binding) []string {
		var out []string
		for _, b := range bs {
			out = append(out, b.Help().Key+" "+b.Help().Desc)
		}
		return out
	}
	own := []key.Binding{k.Up, k.Down}
	if got, want := names(p.Help(own, false)), names(own); !slices.Equal(got, want) {
		t.Errorf("unsorted help %q, want %q", got, want)
	}
	if got, want := names(p.Help([]key.Binding{k.Up, k.Down}, true)), names([]key.Binding{k.Up, k.Down, k.Sort, k.Search}); !slices.Equal(got, want) {
		t.Errorf("sorted help %q, want %q", got, want)
	}
	p.Keys(fixture.Key("/"), 100, true)
	if got, want := names(p.Help(own, true)), names(PromptHelp(p.Ctx)); !slices.Equal(got, want) || len(got) != 2 {
		t.Errorf("help with the prompt open %q, want the prompt's %q", got, want)
	}
}

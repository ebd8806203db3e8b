package runs

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

func addTags(tags ...string) func(*Annotation) {
	return func(a *Annotation) { a.Tags = append(a.Tags, tags...) }
}

// Tags are added sorted and deduplicated, removed, and the note set and
// cleared; each change is in run.json and in what Open reads.
func TestAnnotate(t *testing.T) {
	root := t.TempDir()
	makeRun(t, root, "20260101-0000-aaaa", "alpha")
	steps := []struct {
		name     string
		edit     func(*Annotation)
		wantTags []string
		wantNote string
	}{
		{"tag", addTags("paper", "baseline", "paper"), []string{"baseline", "paper"}, ""},
		{"note", func(a *Annotation) { a.Note = "lr too high?\nsee run b" }, []string{"baseline", "paper"}, "lr too high?\nsee run b"},
		{"untag", func(a *Annotation) {
			a.Tags = slices.DeleteFunc(a.Tags, func(s string) bool { return s == "baseline" })
		}, []string{"paper"}, "lr too high?\nsee run b"},
		{"clear", func(a *Annotation) { a.Tags, a.Note = nil, "" }, nil, ""},
	}
	for _, st := range steps {
		r, err := Annotate(root, "alpha", st.edit)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		o, err := Open(root, "alpha")
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []Meta{r.Meta, o.Meta} {
			if !slices.Equal(m.Tags, st.wantTags) || m.Note != st.wantNote {
				t.Errorf("%s: tags %q note %q, want %q %q", st.name, m.Tags, m.Note, st.wantTags, st.wantNote)
			}
		}
		b, _ := os.ReadFile(filepath.Join(root, "20260101-0000-aaaa", metaName))
		if has := strings.Contains(string(b), `"tags"`); has != (len(st.wantTags) > 0) {
			t.Errorf("%s: run.json has tags key: %v, want %v:\n%s", st.name, has, len(st.wantTags) > 0, b)
		}
	}
}

// A bad tag or note is refused with the reason and run.json is untouched.
func TestAnnotateRefuses(t *testing.T) {
	root := t.TempDir()
	makeRun(t, root, "20260101-0000-aaaa", "alpha")
	path := filepath.Join(root, "20260101-0000-aaaa", metaName)
	before, _ := os.ReadFile(path)
	tests := []struct {
		name, tag, note, want string
	}{
		{name: "space", tag: "a b", want: "whitespace"},
		{name: "tab", tag: "a\tb", want: "whitespace"},
		{name: "escape", tag: "a\x1b[31m", want: "control character"},
		{name: "bidi override", tag: "a\u202eb", want: "control character"},
		{name: "zero width", tag: "a\u200bb", want: "control character"},
		{name: "empty", tag: "", want: "empty"},
		{name: "long", tag: strings.Repeat("x", MaxTagLen+1), want: "at most"},
		{name: "bad utf8", tag: "a\xff", want: "UTF-8"},
		{name: "note escape", note: "red\x1b[31m", want: "control character"},
		{name: "note long", note: strings.Repeat("x", MaxNoteLen+1), want: "at most"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			edit := func(a *Annotation) { a.Note = tt.note }
			if tt.note == "" {
				edit = addTags("ok", tt.tag)
			}
			_, err := Annotate(root, "alpha", edit)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one saying %q", err, tt.want)
			}
			if after, _ := os.ReadFile(path); string(after) != string(before) {
				t.Errorf("run.json changed:\n%s", after)
			}
		})
	}
}

// Keys run.json has that this selmix does not know survive an annotation.
func TestAnnotateKeepsUnknownKeys(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "20260101-0000-aaaa")
	os.MkdirAll(dir, 0o755)
	in := `{"format": 3, "id": "20260101-0000-aaaa", "name": "n", "created": "2026-01-01T00:00:00Z", "status": "finished", "steps": 5, "best_step": -1, "future": {"x": [1, 2]}}`
	os.WriteFile(filepath.Join(dir, metaName), []byte(in), 0o644)
	if _, err := Annotate(root, "n", addTags("t")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, metaName))
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got["future"]) != "map[x:[1 2]]" || got["format"] != 3.0 || fmt.Sprint(got["tags"]) != "[t]" {
		t.Errorf("run.json after tagging:\n%s", b)
	}
}

// A live run's writer rewrites run.json at every refresh: it keeps the
// tags and note written meanwhile, and an annotation keeps its fields.
func TestAnnotateLiveRun(t *testing.T) {
	root := t.TempDir()
	w := mustCreate(t, root, "live", Meta{})
	defer w.Close()
	if _, err := Annotate(root, w.ID(), func(a *Annotation) { a.Tags, a.Note = []string{"x"}, "hi" }); err != nil {
		t.Fatal(err)
	}
	if err := w.SetMeta(func(m *Meta) { m.Steps = 7; m.Status = StatusPaused }); err != nil {
		t.Fatal(err)
	}
	r, err := Open(root, w.ID())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Meta.Tags, []string{"x"}) || r.Meta.Note != "hi" || r.Meta.Steps != 7 || r.Meta.Status != StatusPaused {
		t.Errorf("after the writer's update: %+v, want tags [x], note hi, 7 steps, paused", r.Meta)
	}
	if m := w.Meta(); !slices.Equal(m.Tags, []string{"x"}) {
		t.Errorf("writer's copy has tags %q, want [x]", m.Tags)
	}
}

// Many annotations racing with the writer's updates lose nothing: every
// tag is there at the end, and the writer's last update too.
func TestAnnotateRacesWriter(t *testing.T) {
	root := t.TempDir()
	w := mustCreate(t, root, "live", Meta{})
	defer w.Close()
	const n = 30
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 1; i <= n; i++ {
			if err := w.SetMeta(func(m *Meta) { m.Steps = i }); err != nil {
				t.Error(err)
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := range n {
			if _, err := Annotate(root, w.ID(), addTags(fmt.Sprintf("t%02d", i))); err != nil {
				t.Error(err)
			}
		}
	}()
	wg.Wait()
	r, err := Open(root, w.ID())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Meta.Tags) != n || r.Meta.Steps != n {
		t.Errorf("%d tags and %d steps, want %d and %d: %q", len(r.Meta.Tags), r.Meta.Steps, n, n, r.Meta.Tags)
	}
}

func TestHasTags(t *testing.T) {
	m := Meta{Tags: []string{"a", "b"}}
	for _, tt := range []struct {
		tags []string
		want bool
	}{{nil, true}, {[]string{"a"}, true}, {[]string{"a", "b"}, true}, {[]string{"c"}, false}, {[]string{"a", "c"}, false}} {
		if got := m.HasTags(tt.tags...); got != tt.want {
			t.Errorf("HasTags(%q) = %v, want %v", tt.tags, got, tt.want)
		}
	}
}

func TestTagged(t *testing.T) {
	mk := func(id string, tags ...string) Run { return Run{Meta: Meta{ID: id, Tags: tags}} }
	ids := func(rs []Run) string {
		var s []string
		for _, r := range rs {
			s = append(s, r.Meta.ID)
		}
		return strings.Join(s, ",")
	}
	for _, c := range []struct {
		name string
		tags []string
		want string
	}{
		{"none asked: all", nil, "a,b,c"},
		{"one tag", []string{"x"}, "a,c"},
		{"every tag given", []string{"x", "y"}, "c"},
		{"no run has it", []string{"z"}, ""},
	} {
		all := []Run{mk("a", "x"), mk("b", "y"), mk("c", "x", "y")}
		if got := ids(Tagged(all, c.tags)); got != c.want {
			t.Errorf("%s: Tagged(%v) = %q, want %q", c.name, c.tags, got, c.want)
		}
	}
}

func TestRetag(t *testing.T) {
	root := t.TempDir()
	makeRun(t, root, "20260101-0000-aaaa", "alpha")
	note := "n1"
	r, err := Retag(root, "alpha", []string{"b", "a", "c"}, nil, &note)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.Meta.Tags, " "); got != "a b c" || r.Meta.Note != "n1" {
		t.Fatalf("after adding: tags %q note %q, want \"a b c\" and \"n1\"", got, r.Meta.Note)
	}
	r, err = Retag(root, "alpha", []string{"d"}, []string{"b", "d"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.Meta.Tags, " "); got != "a c" || r.Meta.Note != "n1" {
		t.Errorf("after removing: tags %q note %q, want \"a c\" (a tag added and removed at once is not kept) and the note kept", got, r.Meta.Note)
	}
}

// Tags and a note past their budget are refused before run.json is
// written (9,000 tags twice left a run.json of 1.26 MB, above its own
// 1 MiB read bound, and the run unreadable); what is within it is kept,
// and removing tags from a run over the budget still works.
func TestAnnotateBudget(t *testing.T) {
	root := t.TempDir()
	makeRun(t, root, "20260101-0000-aaaa", "alpha")
	path := filepath.Join(root, "20260101-0000-aaaa", metaName)
	many := func(prefix string, n int) []string {
		var tags []string
		for i := range n {
			tags = append(tags, fmt.Sprintf("%s-%060d", prefix, i))
		}
		return tags
	}
	// 950 tags of 62 bytes (65 in JSON): 61,750 bytes, within the budget.
	if _, err := Annotate(root, "alpha", addTags(many("a", 950)...)); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	for _, edit := range []func(*Annotation){
		addTags(many("b", 9000)...),
		addTags(many("c", 100)...),
		func(a *Annotation) { a.Note = strings.Repeat("n", MaxNoteLen) },
	} {
		_, err := Annotate(root, "alpha", edit)
		if !errors.Is(err, ErrAnnotationTooLarge) || !strings.Contains(err.Error(), fmt.Sprint(MaxAnnotation)) {
			t.Errorf("error %v, want one saying the budget of %d", err, MaxAnnotation)
		}
		if after, _ := os.ReadFile(path); string(after) != string(before) {
			t.Fatalf("run.json changed (%d bytes, was %d)", len(after), len(before))
		}
	}
	r, err := Open(root, "alpha")
	if err != nil || len(r.Meta.Tags) != 950 {
		t.Fatalf("after refusals: %v, %d tags, want 950", err, len(r.Meta.Tags))
	}
	// A run.json written over the budget (by hand, or an older selmix)
	// can still lose tags.
	if _, err := Annotate(root, "alpha", func(a *Annotation) { a.Tags = append(a.Tags, many("d", 200)...) }); err == nil {
		t.Fatal("200 more tags accepted")
	}
	b, _ := setAnnotation(before, Annotation{Tags: append(many("a", 950), many("d", 200)...)})
	os.WriteFile(path, b, 0o644)
	if r, err := Annotate(root, "alpha", func(a *Annotation) { a.Tags = a.Tags[:10] }); err != nil || len(r.Meta.Tags) != 10 {
		t.Fatalf("untag over the budget: %v", err)
	}
}

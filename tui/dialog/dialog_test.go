package dialog

import (
	"reflect"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"selmix/tui/internal/fixture"
	"selmix/tui/keys"
	"selmix/tui/pane"
	"selmix/tui/style"
)

func testCtx() *pane.Context {
	return &pane.Context{Theme: style.NewTheme(false), Keys: keys.Default()}
}

func send(s *Stack, ks ...string) Action {
	var a Action
	for _, k := range ks {
		a = s.Update(fixture.Key(k))
	}
	return a
}

// The top dialog takes the keys; an action closes it and uncovers the
// one below; a second dialog of a kind replaces the first.
func TestStack(t *testing.T) {
	ctx := testCtx()
	s := NewStack(ctx)
	if a := send(s, "q"); a != nil {
		t.Errorf("an empty stack answered %#v", a)
	}
	s.Push(NewError(ctx, "boom"))
	s.Push(NewHelp(ctx, []Group{{Name: "g", Items: []Item{{ctx.Keys.Quit, "quit"}}}}, "", nil, nil, nil))
	s.Push(NewHelp(ctx, nil, "", nil, nil, nil))
	if s.Len() != 2 || s.Top().ID() != HelpID {
		t.Fatalf("stack %d deep, top %s; want 2, help", s.Len(), s.Top().ID())
	}
	if a := send(s, "x"); a != (Close{}) || s.Top().ID() != ErrorID {
		t.Fatalf("any key on the help: %#v, top %v; want close, error below", a, s.Top())
	}
	if a := send(s, "x"); a != nil || s.Len() != 1 {
		t.Fatalf("x on the error dialog: %#v, %d open; want nothing", a, s.Len())
	}
	if a := send(s, "q"); a != (Quit{}) || s.Len() != 0 {
		t.Fatalf("q on the error dialog: %#v, %d open; want quit", a, s.Len())
	}
}

func TestQuitDialog(t *testing.T) {
	for _, c := range []struct {
		attached bool
		keys     []string
		want     Action
	}{
		{false, []string{"y"}, Quit{}},
		{false, []string{"enter"}, Quit{}},
		{false, []string{"d", "n"}, Close{}},
		{false, []string{"esc"}, Close{}},
		{false, []string{"q", "ctrl+c"}, Quit{}},
		{true, []string{"d"}, Quit{Detach: true}},
		{true, []string{"ctrl+c"}, Quit{Detach: true}},
		{true, []string{"y"}, Quit{}},
	} {
		ctx := testCtx()
		s := NewStack(ctx)
		s.Push(NewQuit(ctx, c.attached, "/runs/x"))
		if a := send(s, c.keys...); a != c.want {
			t.Errorf("attached %v, keys %v: %#v, want %#v", c.attached, c.keys, a, c.want)
		}
	}
}

func TestPicker(t *testing.T) {
	ctx := testCtx()
	for _, c := range []struct {
		keys []string
		want Action
	}{
		{[]string{"enter"}, Close{}},
		{[]string{"down", "enter"}, Submit{ID: "picker:policy", Values: []KV{{"policy", "c"}}}},
		{[]string{"up", "enter"}, Submit{ID: "picker:policy", Values: []KV{{"policy", "a"}}}},
		{[]string{"up", "up", "enter"}, Submit{ID: "picker:policy", Values: []KV{{"policy", "c"}}}},
		{[]string{"down", "esc"}, Close{}},
	} {
		s := NewStack(ctx)
		s.Push(NewPicker(ctx, "policy", "policy", []string{"a", "b", "c"}, "b"))
		if a := send(s, c.keys...); !reflect.DeepEqual(a, c.want) {
			t.Errorf("keys %v: %#v, want %#v", c.keys, a, c.want)
		}
	}
}

// A picker's descriptions stand beside their options, cut to the width.
func TestPickerDescriptions(t *testing.T) {
	ctx := testCtx()
	p := NewPicker(ctx, "policy", "policy", []string{"selmix", "resample"}, "selmix").Describe([]string{"mixup", "SelMix's pairs unmixed: CE on both samples"})
	got := ansi.Strip(p.View(80, 10))
	for _, want := range []string{"▸● selmix                mixup\n", "   resample              SelMix's pairs unmixed: CE on both samples\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("view lacks %q:\n%s", want, got)
		}
	}
	if narrow := ansi.Strip(p.View(40, 10)); !strings.Contains(narrow, "   resample              SelMix's p…\n") {
		t.Errorf("at width 40 the description is not cut to 11 columns:\n%s", narrow)
	}
}

// The form hands over only changed fields; a refusal stays on screen
// beside its field and keeps the form open; numbers take no letters,
// text fields do.
func TestForm(t *testing.T) {
	ctx := testCtx()
	check := func(c []KV) map[string]string {
		for _, kv := range c {
			if kv.Key == "n" && kv.Value == "0" {
				return map[string]string{"n": "want n > 0"}
			}
		}
		return nil
	}
	fields := []Field{{Key: "name", Label: "name", Text: true}, {Key: "n", Label: "n", Value: "3"}}
	s := NewStack(ctx)
	f := NewForm(ctx, "f", "form", "enter applies", fields, check)
	s.Push(f)
	if a := send(s, "a", "-", "1", "down", "x", "ctrl+u", "0", "enter"); a != nil {
		t.Fatalf("a refused value closed the form: %#v", a)
	}
	v := f.View(80, 24)
	if !strings.Contains(v, "✗ want n > 0") || !strings.Contains(v, "(was 3)") {
		t.Errorf("the form does not show the refusal and the old value:\n%s", v)
	}
	want := Submit{ID: "f", Values: []KV{{"name", "a-1"}, {"n", "12"}}}
	if a := send(s, "backspace", "1", "2", "enter"); !reflect.DeepEqual(a, want) {
		t.Errorf("submit: %#v, want %#v", a, want)
	}
	s.Push(NewForm(ctx, "f", "form", "", fields, check))
	if a := send(s, "enter"); !reflect.DeepEqual(a, Submit{ID: "f"}) {
		t.Errorf("an unchanged form: %#v, want an empty submit", a)
	}
}

func TestWrap(t *testing.T) {
	got := Wrap("step 67: loss is NaN after the refresh", 12)
	if want := "step 67:\nloss is NaN\nafter the\nrefresh"; got != want {
		t.Errorf("Wrap = %q, want %q", got, want)
	}
}

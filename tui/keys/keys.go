// Package keys is the workbench's key map: every action, its default
// keys, and loading remapped keys from a TOML file.
package keys

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"charm.land/bubbles/v2/key"
	"github.com/BurntSushi/toml"

	"selmix/internal/boundedfile"
)

// Map holds one binding per action. Panes read the bindings they use
// from the shared Map, so a remap reaches every pane.
type Map struct {
	Pause, Step, SUp, SDown, Objective, Policy, Edit, Fork, Export key.Binding
	Quit, Help, Next, Prev                                         key.Binding
	Up, Down, Left, Right, Top, Bottom                             key.Binding
	SmoothMore, SmoothLess, Toggle                                 key.Binding
	Sort, Search, Zoom, ZoomOut, Worst, TopP                       key.Binding
	Linear, Console                                                key.Binding
	Accept, Cancel                                                 key.Binding
	Runs                                                           key.Binding // the runs browser
}

// action names a binding in the keys file.
type action struct {
	name string
	b    func(*Map) *key.Binding
}

var actions = []action{
	{"pause", func(m *Map) *key.Binding { return &m.Pause }},
	{"step", func(m *Map) *key.Binding { return &m.Step }},
	{"s-up", func(m *Map) *key.Binding { return &m.SUp }},
	{"s-down", func(m *Map) *key.Binding { return &m.SDown }},
	{"objective", func(m *Map) *key.Binding { return &m.Objective }},
	{"policy", func(m *Map) *key.Binding { return &m.Policy }},
	{"edit", func(m *Map) *key.Binding { return &m.Edit }},
	{"fork", func(m *Map) *key.Binding { return &m.Fork }},
	{"export", func(m *Map) *key.Binding { return &m.Export }},
	{"quit", func(m *Map) *key.Binding { return &m.Quit }},
	{"help", func(m *Map) *key.Binding { return &m.Help }},
	{"next-pane", func(m *Map) *key.Binding { return &m.Next }},
	{"prev-pane", func(m *Map) *key.Binding { return &m.Prev }},
	{"up", func(m *Map) *key.Binding { return &m.Up }},
	{"down", func(m *Map) *key.Binding { return &m.Down }},
	{"left", func(m *Map) *key.Binding { return &m.Left }},
	{"right", func(m *Map) *key.Binding { return &m.Right }},
	{"top", func(m *Map) *key.Binding { return &m.Top }},
	{"bottom", func(m *Map) *key.Binding { return &m.Bottom }},
	{"smooth-more", func(m *Map) *key.Binding { return &m.SmoothMore }},
	{"smooth-less", func(m *Map) *key.Binding { return &m.SmoothLess }},
	{"toggle", func(m *Map) *key.Binding { return &m.Toggle }},
	{"sort", func(m *Map) *key.Binding { return &m.Sort }},
	{"search", func(m *Map) *key.Binding { return &m.Search }},
	{"zoom", func(m *Map) *key.Binding { return &m.Zoom }},
	{"zoom-out", func(m *Map) *key.Binding { return &m.ZoomOut }},
	{"worst", func(m *Map) *key.Binding { return &m.Worst }},
	{"top-p", func(m *Map) *key.Binding { return &m.TopP }},
	{"linear", func(m *Map) *key.Binding { return &m.Linear }},
	{"console", func(m *Map) *key.Binding { return &m.Console }},
	{"accept", func(m *Map) *key.Binding { return &m.Accept }},
	{"cancel", func(m *Map) *key.Binding { return &m.Cancel }},
	{"runs", func(m *Map) *key.Binding { return &m.Runs }},
}

// Actions lists the action names a keys file may set.
func Actions() []string {
	out := make([]string, len(actions))
	for i, a := range actions {
		out[i] = a.name
	}
	return out
}

// Default returns the built-in key map.
func Default() *Map {
	b := func(help string, ks ...string) key.Binding {
		return key.NewBinding(key.WithKeys(ks...), key.WithHelp(strings.Join(ks, "/"), help))
	}
	m := &Map{
		Pause:      b("pause", "space"),
		Step:       b("step", "n"),
		SUp:        b("s ×1.25", "+", "="),
		SDown:      b("s ÷1.25", "-"),
		Objective:  b("objective", "o"),
		Policy:     b("policy", "p"),
		Edit:       b("edit", "e"),
		Fork:       b("fork here", "f"),
		Export:     b("export plots", "x"),
		Quit:       b("quit", "q", "ctrl+c"),
		Help:       b("keys", "?"),
		Next:       b("pane", "tab"),
		Prev:       b("previous pane", "shift+tab"),
		Up:         b("up", "up", "k"),
		Down:       b("down", "down", "j"),
		Left:       b("left", "left", "h"),
		Right:      b("right", "right", "l"),
		Top:        b("top", "home", "g"),
		Bottom:     b("bottom", "end", "G"),
		SmoothMore: b("more smoothing", "]"),
		SmoothLess: b("less smoothing", "["),
		Toggle:     b("aggregate/scroll", "a"),
		Sort:       b("sort", "r"),
		Search:     b("find class", "/"),
		Zoom:       b("zoom in", "enter", "z"),
		ZoomOut:    b("zoom out", "esc", "backspace"),
		Worst:      b("worst row", "w"),
		TopP:       b("top-P pair", "t"),
		Linear:     b("predicted/realised", "v"),
		Console:    b("worker only", "c"),
		Accept:     b("accept", "enter"),
		Cancel:     b("cancel", "esc"),
		Runs:       b("runs browser", "R"),
	}
	// Short names for the help bar where the key list is long.
	m.SUp.SetHelp("+/-", "s")
	m.Up.SetHelp("↑/k", "up")
	m.Down.SetHelp("↓/j", "down")
	m.Left.SetHelp("←/h", "left")
	m.Right.SetHelp("→/l", "right")
	m.Quit.SetHelp("q", "quit")
	m.ZoomOut.SetHelp("esc", "zoom out")
	return m
}

// keyList is a binding in the file: one key or a list of keys.
type keyList []string

func (k *keyList) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case string:
		*k = keyList{v}
	case []any:
		for _, x := range v {
			s, ok := x.(string)
			if !ok {
				return fmt.Errorf("want a key name or a list of key names, got %v", x)
			}
			*k = append(*k, s)
		}
	default:
		return fmt.Errorf("want a key name or a list of key names, got %v", v)
	}
	if len(*k) == 0 {
		return fmt.Errorf("empty key list")
	}
	for _, s := range *k {
		if strings.TrimSpace(s) == "" || s != strings.TrimSpace(s) {
			return fmt.Errorf("bad key name %q", s)
		}
	}
	return nil
}

// DefaultPath is $XDG_CONFIG_HOME/selmix/keys.toml (or the platform's
// user config directory).
func DefaultPath() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "selmix", "keys.toml")
}

// Resolve is the key map of the file at path, or with path "" of the
// file at DefaultPath if there is one, else Default; and the path it
// came from ("" for Default).
func Resolve(path string) (*Map, string, error) {
	optional := path == ""
	if optional {
		if path = DefaultPath(); path == "" {
			return Default(), "", nil
		}
	}
	m, err := Load(path, optional)
	if err != nil {
		return nil, "", err
	}
	return m, path, nil
}

// keysFile bounds keys.toml.
var keysFile = boundedfile.Limit{What: "keys file", Max: 1 << 20}

// Load returns the default map with the bindings in the TOML file at path
// applied, e.g.
//
//	pause = "p"
//	quit  = ["q", "ctrl+c"]
//
// A missing file (not a bad one) is not an error when optional is set. Every error names
// the file and, where it has one, the key.
func Load(path string, optional bool) (*Map, error) {
	m := Default()
	b, err := boundedfile.ReadFile(path, keysFile)
	if err != nil {
		if optional && os.IsNotExist(err) {
			return m, nil
		}
		return nil, fmt.Errorf("keys file: %w", err)
	}
	if err := m.parse(string(b)); err != nil {
		return nil, fmt.Errorf("keys file %s: %w", path, err)
	}
	return m, nil
}

func (m *Map) parse(text string) error {
	var raw map[string]toml.Primitive
	md, err := toml.Decode(text, &raw)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(raw))
	for n := range raw {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		i := slices.IndexFunc(actions, func(a action) bool { return a.name == n })
		if i < 0 {
			return fmt.Errorf("key %q: unknown action (valid: %s)", n, strings.Join(Actions(), ", "))
		}
		var ks keyList
		if err := md.PrimitiveDecode(raw[n], &ks); err != nil {
			return fmt.Errorf("key %q: %v", n, err)
		}
		bd := actions[i].b(m)
		bd.SetKeys(ks...)
		bd.SetHelp(strings.Join(ks, "/"), bd.Help().Desc)
	}
	return m.conflicts()
}

// conflicts reports a key bound to two global actions, which would make
// one of them unreachable. Scroll keys and form keys are pane-local and
// may share keys with each other, not with global actions.
func (m *Map) conflicts() error {
	global := []string{"pause", "step", "s-up", "s-down", "objective", "policy", "edit", "fork", "export", "quit", "help", "next-pane", "prev-pane"}
	owner := map[string]string{}
	for _, a := range actions {
		isGlobal := slices.Contains(global, a.name)
		for _, k := range a.b(m).Keys() {
			if prev, ok := owner[k]; ok && (isGlobal || slices.Contains(global, prev)) {
				return fmt.Errorf("key %q: %q is bound to both %s and %s", a.name, k, prev, a.name)
			}
			if _, ok := owner[k]; !ok {
				owner[k] = a.name
			}
		}
	}
	return nil
}

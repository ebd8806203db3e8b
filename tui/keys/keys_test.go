package keys

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "keys.toml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoad(t *testing.T) {
	p := write(t, "pause = \"P\"\nquit = [\"Q\", \"ctrl+c\"]\n")
	m, err := Load(p, false)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got := m.Pause.Keys(); len(got) != 1 || got[0] != "P" {
		t.Errorf("pause keys = %v, want [P]", got)
	}
	if got := m.Quit.Keys(); len(got) != 2 || got[0] != "Q" {
		t.Errorf("quit keys = %v, want [Q ctrl+c]", got)
	}
	if got := m.Pause.Help().Key; got != "P" {
		t.Errorf("pause help key = %q, want P", got)
	}
	if got := m.Step.Keys(); got[0] != "n" {
		t.Errorf("unmapped step keys = %v, want the default [n]", got)
	}
}

func TestLoadErrors(t *testing.T) {
	cases := []struct {
		name, text string
		want       []string // substrings of the error
	}{
		{"unknown action", "paws = \"p\"\n", []string{"keys.toml", `"paws"`, "unknown action"}},
		{"not a string", "pause = 3\n", []string{"keys.toml", `"pause"`}},
		{"empty list", "pause = []\n", []string{`"pause"`, "empty"}},
		{"blank key", "pause = \" \"\n", []string{`"pause"`, "bad key name"}},
		{"conflict", "pause = \"q\"\n", []string{`"q"`, "pause", "quit"}},
		{"syntax", "pause = \n", []string{"keys.toml"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(write(t, c.text), false)
			if err == nil {
				t.Fatalf("Load(%q) succeeded, want an error", c.text)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestLoadMissing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "none.toml")
	if _, err := Load(p, true); err != nil {
		t.Errorf("optional missing file: %v", err)
	}
	if _, err := Load(p, false); err == nil || !strings.Contains(err.Error(), "none.toml") {
		t.Errorf("required missing file: err = %v, want one naming the file", err)
	}
}

func TestDefaultHasNoConflicts(t *testing.T) {
	if err := Default().conflicts(); err != nil {
		t.Error(err)
	}
}

// The keys file is user input: any text gives a map or an error, never a
// panic.
func FuzzParse(f *testing.F) {
	f.Add("pause = [\"space\"]\nquit = [\"q\", \"ctrl+c\"]\n")
	f.Add("pause = \"p\"\n")
	f.Add("[x]\ny = 1\n")
	f.Add("step = [\"n\", \"n\"]\n")
	f.Fuzz(func(t *testing.T, text string) {
		m := Default()
		if err := m.parse(text); err == nil {
			m.conflicts()
		}
	})
}

// Resolve: a file given must be there and good; without one, the default
// file is read if present, else the defaults are used.
func TestResolve(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	def := filepath.Join(cfg, "selmix", "keys.toml")
	if m, p, err := Resolve(""); err != nil || p != def || m.Pause.Keys()[0] != Default().Pause.Keys()[0] {
		t.Errorf("no file: path %q, %v; want the defaults and %q", p, err, def)
	}
	if err := os.MkdirAll(filepath.Dir(def), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(def, []byte("pause = \"P\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if m, p, err := Resolve(""); err != nil || p != def || m.Pause.Keys()[0] != "P" {
		t.Errorf("default file: path %q, %v; want pause on P from %q", p, err, def)
	}
	for _, path := range []string{filepath.Join(cfg, "missing.toml"), write(t, "paws = \"p\"\n")} {
		if _, _, err := Resolve(path); err == nil {
			t.Errorf("Resolve(%s): no error", path)
		}
	}
}

// README documents the keys file with every action's name (issue #37:
// keys.toml had no documented format).
func TestReadmeListsActions(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), "### Key bindings (keys.toml)")
	if i < 0 {
		t.Fatal("README has no section on the keys file")
	}
	sec := string(b)[i:]
	if j := strings.Index(sec[4:], "\n#"); j > 0 {
		sec = sec[:j+4]
	}
	for _, a := range Actions() {
		if !strings.Contains(sec, "`"+a+"`") {
			t.Errorf("README's keys section lacks the action %s", a)
		}
	}
}

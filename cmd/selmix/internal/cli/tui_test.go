package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWorkbenchInputErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "keys.toml")
	if err := os.WriteFile(bad, []byte("paws = \"p\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"bad keys file", []string{"tui", "--keys", bad}, []string{"keys.toml", `"paws"`}},
		{"no terminal", []string{"tui", "--runs", dir}, []string{"needs a terminal", "--headless"}},
		{"bare selmix, no terminal", []string{"--runs", dir}, []string{"needs a terminal"}},
		{"open needs a run", []string{"open"}, []string{"accepts 1 arg"}},
		{"stray argument", []string{"nonsense"}, []string{"unknown command"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("XDG_CONFIG_HOME", dir+"/none")
			var stdout, stderr bytes.Buffer
			code := Main(c.args, &stdout, &stderr)
			if code != 2 {
				t.Errorf("exit code %d, want 2 (stderr %q)", code, stderr.String())
			}
			for _, w := range c.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr %q does not mention %q", stderr.String(), w)
				}
			}
		})
	}
}

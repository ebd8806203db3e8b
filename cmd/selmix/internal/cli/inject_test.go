package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"selmix/cmd/selmix/internal/selmixtest"
	"selmix/runs/runstest"
)

// A run directory anyone may have written (runs are world-readable) holds
// a name and class names with escape sequences and newlines: what selmix
// prints of it holds none of them. ls and show print plain text (no ESC
// byte at all); open prints selmix's own styling, but none of the
// injected sequences, and the names stay visible with U+FFFD for what was
// a control character.
func TestNoTerminalInjection(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	const id = "20261123-1200-819c"
	root := t.TempDir()
	runstest.Copy(t, filepath.Join(vizRuns, id), filepath.Join(root, id), func(name string, b []byte) []byte {
		switch name {
		case "run.json":
			return bytes.Replace(b, []byte(`"viz-selmix"`), []byte(`"ev\u001b]0;pwned\u0007il\u001b[2J\nnm\tx"`), 1)
		case "events.jsonl":
			b = bytes.Replace(b, []byte(`"T-shirt/top"`), []byte(`"\u001b[31mRED"`), 1)
			return bytes.Replace(b, []byte(`"Trouser"`), []byte(`"a\nb"`), 1)
		}
		return b
	})
	injected := []string{"\x1b]", "\x1b[2J", "\x1b[31mRED", "pwned\x07", "a\nb", "\nnm"}
	for _, c := range []struct {
		args  []string
		plain bool // no styling: not one ESC byte
		want  []string
	}{
		{[]string{"runs", "ls"}, true, []string{"evil\uFFFDnm\uFFFDx"}},
		{[]string{"runs", "show", id}, true, []string{"name      evil\uFFFDnm\uFFFDx\n"}},
		{[]string{"runs", "compare", id, id}, true, []string{"evil\uFFFDnm\uFFFDx"}},
		{[]string{"open", id, "--print", "140x42"}, false, []string{"RED", "a\uFFFDb"}},
	} {
		out, code := selmixtest.Code(t, append(os.Environ(), "SELMIX_RUNS="+root), c.args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", c.args, code, out)
		}
		if c.plain && strings.Contains(out, "\x1b") {
			t.Errorf("%v: output holds ESC at byte %d:\n%q", c.args, strings.Index(out, "\x1b"), out)
		}
		for _, s := range injected {
			if strings.Contains(out, s) {
				t.Errorf("%v: output holds the injected %q", c.args, s)
			}
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: output lacks %q:\n%s", c.args, w, out)
			}
		}
	}
}

// A run name with control characters is refused before the run exists:
// one printable line, exit 2.
func TestRunNameRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	root := t.TempDir()
	out, code := selmixtest.Code(t, os.Environ(), "run", "--headless", "--runs", root, "--set", "name=a\x1b[31mb\nc")
	want := `selmix: name: "a\x1b[31mb\nc" holds a control character at byte 1 (a run name is shown in terminals)` + "\n"
	if code != 2 || out != want {
		t.Errorf("exit %d, output %q; want 2 and %q", code, out, want)
	}
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Errorf("a refused run left %d entries in the run store", len(ents))
	}
}

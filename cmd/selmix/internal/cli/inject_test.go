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

// Bidirectional and zero-width characters make a terminal show another
// name than the file holds: selmix refuses them in the names it accepts
// (run.name, tags; exit 2, one line, nothing written) and escapes them
// where a run's name from its folder is printed, as text or JSON.
func TestBidiNames(t *testing.T) {
	t.Parallel()
	const id = "20261123-1200-819c"
	hidden := []string{"\u202e", "\u2066", "\u2069", "\u202a", "\u200e", "\u200f", "\u061c", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff"}
	for _, h := range hidden {
		root := t.TempDir()
		// One step and no figures: should the name be taken, the run is short.
		code, _, stderr := runCLI("run", "--headless", "-q", "--runs", root, "--set", "finetune.steps=1", "--set", "record.plots=false", "--set", "name=evil"+h+"txt.exe")
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "holds a control character at byte 4") || strings.Contains(stderr, h) {
			t.Errorf("name with %U: exit %d, stderr %q; want 2 and one line, the character escaped", []rune(h)[0], code, stderr)
		}
		if ents, _ := os.ReadDir(root); len(ents) != 0 {
			t.Errorf("name with %U: a refused run left %d entries in the run store", []rune(h)[0], len(ents))
		}
	}
	root := t.TempDir()
	runstest.Copy(t, filepath.Join(vizRuns, id), filepath.Join(root, id), func(name string, b []byte) []byte {
		if name == "run.json" {
			return bytes.Replace(b, []byte(`"viz-selmix"`), []byte(`"evil\u202etxt.exe\u2066x\u2069\u200by\ufeff"`), 1)
		}
		return b
	})
	for _, h := range hidden[:3] {
		code, _, stderr := runCLI("runs", "tag", "--runs", root, id, "a"+h+"b")
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "control character") || strings.Contains(stderr, h) {
			t.Errorf("tag with %U: exit %d, stderr %q; want 2 and one line, the character escaped", []rune(h)[0], code, stderr)
		}
	}
	for _, args := range [][]string{{"runs", "ls"}, {"runs", "ls", "--json"}, {"runs", "show", id}, {"runs", "show", "--json", id}} {
		code, stdout, stderr := runCLI(append(args, "--runs", root)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		for _, h := range hidden {
			if strings.Contains(stdout, h) {
				t.Errorf("%v: output holds %U raw:\n%s", args, []rune(h)[0], stdout)
			}
		}
		if !strings.Contains(stdout, "evil") {
			t.Errorf("%v: the name is not shown:\n%s", args, stdout)
		}
	}
}

// finetune.cov_margin above 1 aims every coverage constraint past what
// any coverage reaches: refused before the run exists, exit 2, one line
// naming the key and its range.
func TestCovMarginBound(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"1e300", "1.01"} {
		root := t.TempDir()
		code, _, stderr := runCLI("run", "--headless", "-q", "--runs", root, "--set", "finetune.steps=1", "--set", "record.plots=false", "--set", "finetune.cov_margin="+v)
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "finetune.cov_margin: want auto or a number in [0, 1]") {
			t.Errorf("cov_margin = %s: exit %d, stderr %q; want 2 and one line naming the key and the range", v, code, stderr)
		}
		if ents, _ := os.ReadDir(root); len(ents) != 0 {
			t.Errorf("cov_margin = %s: a refused run left %d entries in the run store", v, len(ents))
		}
	}
}

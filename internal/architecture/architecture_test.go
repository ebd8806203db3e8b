package architecture

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// root is the repository root, from this package's folder.
const root = "../.."

// tree asks the go command about the module; deps remembers each
// pattern's `go list -deps`, since most rules share a witness.
type tree struct {
	t     *testing.T
	goBin string
	deps  map[string][]string
}

func newTree(t *testing.T) *tree {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	return &tree{t: t, goBin: goBin, deps: map[string][]string{}}
}

func (tr *tree) list(args ...string) string {
	tr.t.Helper()
	out, err := exec.Command(tr.goBin, append([]string{"list"}, args...)...).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		tr.t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return string(out)
}

// depsOf is every package the packages of patterns (space-separated)
// link, themselves included.
func (tr *tree) depsOf(patterns string) []string {
	tr.t.Helper()
	if d, ok := tr.deps[patterns]; ok {
		return d
	}
	d := strings.Fields(tr.list(append([]string{"-deps"}, strings.Fields(patterns)...)...))
	tr.deps[patterns] = d
	return d
}

// under matches the packages at or below any of prefixes.
func under(prefixes ...string) func(string) bool {
	return func(p string) bool {
		for _, pre := range prefixes {
			if p == pre || strings.HasPrefix(p, pre+"/") {
				return true
			}
		}
		return false
	}
}

// rule: no package of pattern links, directly or not, a package banned
// matches. witness is a package that does link one: proof that the rule
// can fail.
type rule struct {
	pattern, what string
	banned        func(string) bool
	witness       string
}

// layers is the map of ARCHITECTURE.md: a package imports only layers
// drawn below it; siblings (tui, app, bench) do not import each other.
var layers = []rule{
	// The engine links no store, UI, figures, application or command.
	{"selmix/core/...", "selmix/runs, tui, viz, app, bench or cmd",
		under("selmix/runs", "selmix/tui", "selmix/viz", "selmix/app", "selmix/bench", "selmix/cmd"), "selmix/cmd/selmix"},
	// The store links no figures, UI, application or command.
	{"selmix/runs/...", "selmix/viz, tui, app, bench or cmd",
		under("selmix/viz", "selmix/tui", "selmix/app", "selmix/bench", "selmix/cmd"), "selmix/cmd/selmix"},
	// The figures link no UI, application or command.
	{"selmix/viz/...", "selmix/tui, app, bench or cmd",
		under("selmix/tui", "selmix/app", "selmix/bench", "selmix/cmd"), "selmix/cmd/selmix"},
	// The workbench is handed its capabilities (figures, fork) as
	// functions: it links no figures, application, suite or command.
	{"selmix/tui/...", "selmix/viz, app, bench or cmd",
		under("selmix/viz", "selmix/app", "selmix/bench", "selmix/cmd"), "selmix/cmd/selmix"},
	// The application sits under the command line and beside the
	// workbench: it links neither (the workbench is wired in cli).
	{"selmix/app/...", "selmix/tui, bench or cmd",
		under("selmix/tui", "selmix/bench", "selmix/cmd"), "selmix/cmd/selmix"},
	// The paper suite links no UI, application or command.
	{"selmix/bench", "selmix/tui, app or cmd",
		under("selmix/tui", "selmix/app", "selmix/cmd"), "selmix/cmd/selmix"},
	// The helpers and the embedded assets sit under every layer.
	{"selmix/internal/... selmix/assets", "selmix package outside internal and assets",
		func(p string) bool {
			return strings.HasPrefix(p, "selmix/") && !under("selmix/internal", "selmix/assets")(p)
		}, "selmix/cmd/selmix"},

	// Within the layers.
	// The workbench links no plotting library (its figures come in as
	// screen.Screens.Export).
	{"selmix/tui/...", "gonum.org/v1/plot", under("gonum.org/v1/plot"), "selmix/viz"},
	// The readers of a run speak the engine's vocabulary (core/loop), not
	// the engine: the workbench's forecast comes in as
	// screen.Screens.Forecast.
	{"selmix/runs/... selmix/tui/... selmix/viz/...", "selmix/core/train (the engine)",
		under("selmix/core/train"), "selmix/app"},
	// The vocabulary is nouns: it links no engine and no trainer.
	{"selmix/core/loop", "selmix/core/train, core/local or core/worker",
		under("selmix/core/train", "selmix/core/local", "selmix/core/worker"), "selmix/app"},
	// The comparison view links not the runs browser.
	{"selmix/tui/compare", "selmix/tui/browser", under("selmix/tui/browser"), "selmix/tui/screen"},
	// The store handles no signals.
	{"selmix/runs/...", "os/signal (the sweep executors are in app/sweepexec)", under("os/signal"), "selmix/app/sweepexec"},
}

// Layers point down: every rule of the map holds, and each could fail.
func TestLayersPointDown(t *testing.T) {
	tr := newTree(t)
	for _, c := range layers {
		if !slices.ContainsFunc(tr.depsOf(c.witness), c.banned) {
			t.Errorf("%s links no %s: the check on %s would prove nothing", c.witness, c.what, c.pattern)
		}
		var got []string
		for _, p := range tr.depsOf(c.pattern) {
			if c.banned(p) {
				got = append(got, p)
			}
		}
		if len(got) > 0 {
			t.Errorf("%s links %s: want no %s", c.pattern, strings.Join(got, ", "), c.what)
		}
	}
}

// Processes are started by the application: no package of the store
// imports os/exec itself (core/gpu, which asks nvidia-smi, may).
func TestStoreStartsNoProcess(t *testing.T) {
	tr := newTree(t)
	out := tr.list("-f", "{{.ImportPath}} {{join .Imports \" \"}}", "selmix/runs/...", "selmix/app/sweepexec")
	witness := false
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if !slices.Contains(f[1:], "os/exec") {
			continue
		}
		if f[0] == "selmix/app/sweepexec" {
			witness = true
		} else {
			t.Errorf("%s imports os/exec: want processes started in app", f[0])
		}
	}
	if !witness {
		t.Error("selmix/app/sweepexec imports no os/exec: the check on selmix/runs/... would prove nothing")
	}
}

var (
	codeSpan = regexp.MustCompile("`([^`\n]+)`")
	linkDest = regexp.MustCompile(`\]\(([^)\s]+)\)`)
)

// ARCHITECTURE.md stays true: every repository path it names (a code
// span with a '/' or ending in .go or .md, and every relative link)
// exists, and every top-level folder that holds a Go package has its
// place in the code map.
func TestMapNamesWhatExists(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	var paths []string
	for _, m := range codeSpan.FindAllStringSubmatch(text, -1) {
		s := m[1]
		if strings.ContainsAny(s, " \t") || strings.Contains(s, "://") {
			continue // a command line or a URL
		}
		if strings.Contains(s, "/") || strings.HasSuffix(s, ".go") || strings.HasSuffix(s, ".md") {
			paths = append(paths, s)
		}
	}
	for _, m := range linkDest.FindAllStringSubmatch(text, -1) {
		s, _, _ := strings.Cut(m[1], "#")
		if s != "" && !strings.Contains(s, "://") && !strings.HasPrefix(s, "mailto:") {
			paths = append(paths, s)
		}
	}
	if len(paths) < 20 {
		t.Fatalf("ARCHITECTURE.md names %d paths (%v): the check would prove little", len(paths), paths)
	}
	for _, p := range paths {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(strings.TrimSuffix(p, "/")))); err != nil {
			t.Errorf("ARCHITECTURE.md names %s, which does not exist", p)
		}
	}

	tr := newTree(t)
	seen := map[string]bool{}
	for _, p := range strings.Fields(tr.list("selmix/...")) {
		top, _, _ := strings.Cut(strings.TrimPrefix(p, "selmix/"), "/")
		if seen[top] {
			continue
		}
		seen[top] = true
		if !strings.Contains(text, "`"+top+"/`") {
			t.Errorf("ARCHITECTURE.md's code map has no `%s/` (it holds %s)", top, p)
		}
	}
}

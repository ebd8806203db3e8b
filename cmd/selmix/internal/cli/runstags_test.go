package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"selmix/runs"
	"selmix/runs/runstest"
)

// copyVizRuns copies the two viz fixture runs into a fresh runs root.
func copyVizRuns(t *testing.T) (root string, ids []string) {
	t.Helper()
	root = t.TempDir()
	all, err := runs.List(vizRuns)
	if err != nil || len(all) != 2 {
		t.Fatalf("viz fixture runs: %v %v", all, err)
	}
	for _, r := range all {
		runstest.Copy(t, r.Dir, filepath.Join(root, r.Meta.ID), nil)
		ids = append(ids, r.Meta.ID)
	}
	return root, ids
}

// runs tag, untag and note change run.json; ls --tag filters on tags,
// ls and show print them, --json carries them.
func TestRunsTagNote(t *testing.T) {
	t.Parallel()
	root, ids := copyVizRuns(t)
	steps := [][]string{
		{"runs", "tag", "viz-selmix", "paper", "baseline"},
		{"runs", "tag", "viz-uniform", "baseline"},
		{"runs", "untag", "viz-selmix", "baseline"},
		{"runs", "note", "viz-selmix", "s raised to 30 at step 80\nlooks better"},
	}
	for _, args := range steps {
		if code, stdout, stderr := runCLI(append(args, "--runs", root)...); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, stdout, stderr)
		}
	}
	sel, _ := runs.Open(root, "viz-selmix")
	uni, _ := runs.Open(root, "viz-uniform")
	if !slices.Equal(sel.Meta.Tags, []string{"paper"}) || sel.Meta.Note != "s raised to 30 at step 80\nlooks better" || !slices.Equal(uni.Meta.Tags, []string{"baseline"}) {
		t.Fatalf("run.json: selmix %q %q, uniform %q", sel.Meta.Tags, sel.Meta.Note, uni.Meta.Tags)
	}

	ls := func(args ...string) string {
		t.Helper()
		code, stdout, stderr := runCLI(append([]string{"runs", "ls", "--runs", root}, args...)...)
		if code != 0 {
			t.Fatalf("runs ls %v: exit %d: %s", args, code, stderr)
		}
		return stdout
	}
	if out := ls("--tag", "paper"); !strings.Contains(out, ids[0]) || strings.Contains(out, ids[1]) || !strings.Contains(out, "TAGS") {
		t.Errorf("ls --tag paper lists:\n%s", out)
	}
	if out := ls("--tag", "baseline"); strings.Contains(out, ids[0]) || !strings.Contains(out, ids[1]) {
		t.Errorf("ls --tag baseline lists:\n%s", out)
	}
	if out := ls("--tag", "paper", "--tag", "baseline"); !strings.Contains(out, "no run in") {
		t.Errorf("ls with two tags no run has lists:\n%s", out)
	}
	var listed []struct {
		ID   string
		Tags []string
		Note string
	}
	if err := json.Unmarshal([]byte(ls("--json", "--tag", "paper")), &listed); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].ID != sel.Meta.ID || !slices.Equal(listed[0].Tags, sel.Meta.Tags) || listed[0].Note != sel.Meta.Note {
		t.Errorf("ls --json --tag paper: %+v", listed)
	}
	if err := json.Unmarshal([]byte(ls("--json")), &listed); err != nil || len(listed) != 2 {
		t.Fatalf("ls --json: %+v %v", listed, err)
	}

	_, stdout, _ := runCLI("runs", "show", "--runs", root, "viz-selmix")
	if !strings.Contains(stdout, "tags      paper\n") || !strings.Contains(stdout, "note      s raised to 30 at step 80\n          looks better\n") {
		t.Errorf("runs show:\n%s", stdout)
	}
	var shown struct {
		Tags []string
		Note string
	}
	_, stdout, _ = runCLI("runs", "show", "--json", "--runs", root, "viz-selmix")
	if err := json.Unmarshal([]byte(stdout), &shown); err != nil || !slices.Equal(shown.Tags, []string{"paper"}) || shown.Note != sel.Meta.Note {
		t.Errorf("runs show --json: %+v %v", shown, err)
	}

	if code, _, _ := runCLI("runs", "note", "viz-selmix", "", "--runs", root); code != 0 {
		t.Fatal("clearing the note failed")
	}
	if r, _ := runs.Open(root, "viz-selmix"); r.Meta.Note != "" {
		t.Errorf("note after clearing: %q", r.Meta.Note)
	}
}

// Bad tags and notes are input errors (exit 2, one line naming the
// reason) and change nothing.
func TestRunsTagRefuses(t *testing.T) {
	t.Parallel()
	root, ids := copyVizRuns(t)
	path := filepath.Join(root, ids[0], "run.json")
	before, _ := os.ReadFile(path)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"space", []string{"runs", "tag", "viz-selmix", "good", "two words"}, `tag "two words" contains whitespace`},
		{"escape", []string{"runs", "tag", "viz-selmix", "a\x1b[2J"}, "control character"},
		{"note escape", []string{"runs", "note", "viz-selmix", "x\x07"}, "control character"},
		{"ls filter", []string{"runs", "ls", "--tag", "a b"}, `--tag: tag "a b" contains whitespace`},
		{"unknown run", []string{"runs", "tag", "nope", "x"}, `no run "nope"`},
		{"no tag", []string{"runs", "tag", "viz-selmix"}, "takes a run and at least one tag (got 1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(append(tt.args, "--runs", root)...)
			if code != 2 || !strings.Contains(stderr, tt.want) || (tt.name != "unknown run" && strings.Count(stderr, "\n") != 1) {
				t.Errorf("exit %d, stderr %q; want 2 and one line with %q", code, stderr, tt.want)
			}
			if after, _ := os.ReadFile(path); string(after) != string(before) {
				t.Errorf("run.json changed")
			}
		})
	}
}

// Tags and notes edited by hand into run.json never reach the terminal
// with their escape sequences.
func TestRunsNoteSanitised(t *testing.T) {
	t.Parallel()
	root, ids := copyVizRuns(t)
	path := filepath.Join(root, ids[0], "run.json")
	b, _ := os.ReadFile(path)
	var m map[string]any
	json.Unmarshal(b, &m)
	m["tags"] = []string{"x\x1b[31m"}
	m["note"] = "red \x1b[31mtext\x1b[0m\rbell\x07"
	b, _ = json.Marshal(m)
	os.WriteFile(path, b, 0o644)
	for _, args := range [][]string{{"runs", "ls"}, {"runs", "show", ids[0]}} {
		code, stdout, stderr := runCLI(append(args, "--runs", root)...)
		if code != 0 || strings.ContainsAny(stdout, "\x1b\x07\r") {
			t.Errorf("%v: exit %d, output %q %s", args, code, stdout, stderr)
		}
	}
}

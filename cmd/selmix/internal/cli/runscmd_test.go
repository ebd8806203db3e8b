package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"selmix/runs"
	"selmix/runs/record"
)

// rm asks first: "n" (or nothing) keeps the run, "y" removes it, --yes does
// not ask.
func TestRemoveRunsAsks(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	var ids []string
	for _, name := range []string{"a", "b"} {
		w, err := runs.Create(root, name, "seed = 1\n", runs.Meta{Status: runs.StatusFinished})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, w.ID())
		w.Close()
	}
	var out bytes.Buffer
	if err := removeRuns(strings.NewReader("n\n"), &out, root, ids[:1], false); err != nil {
		t.Fatal(err)
	}
	if _, err := runs.Open(root, ids[0]); err != nil || !strings.Contains(out.String(), "kept") {
		t.Fatalf("answer n: run gone (%v) or not reported kept:\n%s", err, out.String())
	}
	if err := removeRuns(strings.NewReader("y\n"), &out, root, ids[:1], false); err != nil {
		t.Fatal(err)
	}
	if err := removeRuns(strings.NewReader(""), &out, root, ids[1:], true); err != nil {
		t.Fatal(err)
	}
	if all, _ := runs.List(root); len(all) != 0 {
		t.Errorf("%d runs left after y and --yes, want 0", len(all))
	}
	if err := removeRuns(strings.NewReader("y\n"), &out, root, []string{"nope"}, true); err == nil {
		t.Error("removing an unknown run did not fail")
	}
}

// v1Runs is the runs root of the format-1 fixtures.
var v1Runs = filepath.Join("..", "..", "..", "..", "runs", "record", "testdata", "v1run")

// runs ls --json lists every run with the documented keys; the values are
// run.json's.
func TestRunsLsJSON(t *testing.T) {
	t.Parallel()
	for _, root := range []string{v1Runs, vizRuns} {
		code, stdout, stderr := runCLI("runs", "ls", "--json", "--runs", root)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var got []map[string]any
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, stdout)
		}
		all, _ := runs.List(root)
		if len(got) != len(all) || len(got) != 2 {
			t.Fatalf("%d runs listed, %d in %s", len(got), len(all), root)
		}
		for i, r := range all {
			g := got[i]
			for _, k := range []string{"id", "name", "status", "created", "objective", "policy", "steps", "best", "best_step", "parent", "parent_step", "format", "dir", "live"} {
				if _, ok := g[k]; !ok {
					t.Errorf("%s: no %q", r.Meta.ID, k)
				}
			}
			if g["id"] != r.Meta.ID || g["name"] != r.Meta.Name || g["best"] != r.Meta.Best || g["best_step"] != float64(r.Meta.BestStep) ||
				g["format"] != float64(r.Meta.Format) || g["status"] != r.EffectiveStatus() || g["parent"] != r.Meta.Parent {
				t.Errorf("%s listed as %v; run.json says %+v", r.Meta.ID, g, r.Meta)
			}
		}
	}
	// An empty root is an empty array, not null.
	if _, stdout, _ := runCLI("runs", "ls", "--json", "--runs", t.TempDir()); strings.TrimSpace(stdout) != "[]" {
		t.Errorf("empty root: %q", stdout)
	}
}

// runs show --json holds the run, its config as a table and every
// refresh's scalars, in one schema for both formats.
func TestRunsShowJSON(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ root, name string }{{v1Runs, "min-recall-selmix-fork"}, {vizRuns, "viz-selmix"}} {
		code, stdout, stderr := runCLI("runs", "show", "--json", "--runs", c.root, c.name)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var got struct {
			Name      string
			Format    int
			Config    map[string]any
			Refreshes []record.RefreshData
			Controls  []record.ControlData
			Summary   *record.SummaryData
		}
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatalf("%s: not JSON: %v", c.name, err)
		}
		r, _ := runs.Open(c.root, c.name)
		h, err := record.Load(r)
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != c.name || got.Format != r.Meta.Format || len(got.Refreshes) != len(h.Refreshes) || len(got.Controls) != len(h.Controls) || got.Summary == nil {
			t.Fatalf("%s: %+v", c.name, got)
		}
		last := h.Refreshes[len(h.Refreshes)-1]
		lj := got.Refreshes[len(got.Refreshes)-1]
		if float64(lj.Objectives["min-recall"]) != last.Stats.Objectives[1] || float64(lj.Report.MinRecall) != last.Stats.Report.MinRecall ||
			lj.Step != last.Step || lj.Hyper.S != last.Hyper.S {
			t.Errorf("%s: last refresh %+v, log says %+v", c.name, lj, last)
		}
		if s, _ := got.Config["finetune"].(map[string]any)["refresh"].(float64); int(s) != last.Hyper.Refresh {
			t.Errorf("%s: config finetune.refresh %v, want %d", c.name, got.Config["finetune"], last.Hyper.Refresh)
		}
		if float64(got.Summary.TestAfter.MeanRecall) != h.Final.TestAfter.MeanRecall || len(got.Summary.TestAfter.Recall) != 10 {
			t.Errorf("%s: summary %+v", c.name, got.Summary.TestAfter)
		}
	}
}

// Format-1 runs show, export and compare as before.
func TestFormat1Commands(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCLI("runs", "show", "--runs", v1Runs, "min-recall-selmix-fork")
	if code != 0 || !strings.Contains(stdout, "step    100  set s=2") || !strings.Contains(stdout, "3 refreshes, 1 controls") || !strings.Contains(stdout, "test after") {
		t.Errorf("runs show: exit %d\n%s%s", code, stdout, stderr)
	}
	out := t.TempDir()
	if code, _, stderr := runCLI("export", "--runs", v1Runs, "min-recall-selmix", "--out", out, "--dpi", "30"); code != 0 {
		t.Errorf("export: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCLI("export", "--compare", "--runs", v1Runs, "min-recall-selmix", "min-recall-selmix-fork", "--out", out, "--dpi", "30"); code != 0 {
		t.Errorf("export --compare: exit %d: %s", code, stderr)
	}
	for _, f := range []string{"gain.png", "per-class.csv", "compare-final.png", "compare-psi_min-recall.csv"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	code, stdout, stderr = runCLI("runs", "compare", "--runs", v1Runs, "min-recall-selmix", "min-recall-selmix-fork")
	if code != 0 || !strings.Contains(stdout, "finetune.s") || !strings.Contains(stdout, "ψ min-recall") {
		t.Errorf("runs compare: exit %d\n%s%s", code, stdout, stderr)
	}
}

// Every wrong number of arguments is bad input, exit 2 with one line:
// runs compare with one run exited 1.
func TestArgumentCounts(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, args := range [][]string{
		{"runs", "compare", "x"}, {"runs", "compare"}, {"runs", "show"}, {"runs", "show", "a", "b"},
		{"runs", "rm"}, {"runs", "tag", "x"}, {"resume"}, {"fork", "a", "b"}, {"stop"}, {"attach", "a", "b"},
		{"sweep", "resume"}, {"open"},
	} {
		code, stdout, stderr := runCLI(append(args, "--runs", root)...)
		if code != 2 || stdout != "" || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and one line", args, code, stdout, stderr)
		}
	}
}

// Folders an older selmix left when a kill cut a creation off (while it
// wrote run.json; while it wrote config.toml), and a copy of a run's
// folder (its run.json keeps the run's id), are listed as broken runs;
// every command that acts on a run refuses them in one line, exit 2,
// and runs rm --yes removes them, saying so in one line.
func TestBrokenFolders(t *testing.T) {
	t.Parallel()
	const id = "20261123-1200-819c"
	root := t.TempDir()
	if err := os.CopyFS(filepath.Join(root, id), os.DirFS(filepath.Join(vizRuns, id))); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(root, "backup"), os.DirFS(filepath.Join(vizRuns, id))); err != nil {
		t.Fatal(err)
	}
	files := map[string]map[string]string{
		"20260101-0000-aaaa": {"config.toml": "seed = 1\n", "events.jsonl": "", "lock": "", ".run.json.tmp-123": `{"id": "2026`},
		"20260101-0000-bbbb": {"lock": "", ".config.toml.tmp-456": "seed"},
	}
	for dir, fs := range files {
		if err := os.MkdirAll(filepath.Join(root, dir, "checkpoints"), 0o755); err != nil {
			t.Fatal(err)
		}
		for name, text := range fs {
			if err := os.WriteFile(filepath.Join(root, dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := map[string]string{
		"20260101-0000-aaaa": "has no run.json",
		"20260101-0000-bbbb": "has no run.json",
		"backup":             "a copied folder keeps its id; rename the folder to " + id,
	}
	code, stdout, stderr := runCLI("runs", "ls", "--runs", root)
	if code != 0 {
		t.Fatalf("runs ls: exit %d: %s", code, stderr)
	}
	for dir, msg := range want {
		if !regexp.MustCompile(`(?m)^` + dir + ` .*broken: .*` + regexp.QuoteMeta(msg)).MatchString(stdout) {
			t.Errorf("runs ls does not list %s as broken (%s):\n%s", dir, msg, stdout)
		}
	}
	for dir, msg := range want {
		for _, args := range [][]string{{"resume", "-q", dir}, {"runs", "show", dir}, {"fork", "-q", dir}, {"replay", dir}} {
			code, stdout, stderr := runCLI(append(args, "--runs", root)...)
			out := strings.TrimSpace(stdout + stderr)
			if code != 2 || strings.Contains(out, "\n") || !strings.Contains(out, msg) {
				t.Errorf("%v: exit %d, output\n%s\nwant exit 2 and one line saying %q", args, code, out, msg)
			}
		}
	}
	for dir := range want {
		code, stdout, stderr := runCLI("runs", "rm", "--yes", "--runs", root, dir)
		out := strings.TrimSpace(stdout + stderr)
		if code != 0 || strings.Contains(out, "\n") || out != "removed folder "+dir+" (a broken run)" {
			t.Errorf("runs rm --yes %s: exit %d, output\n%s\nwant one line: removed folder …", dir, code, out)
		}
		if _, err := os.Stat(filepath.Join(root, dir)); !os.IsNotExist(err) {
			t.Errorf("%s still there after runs rm: %v", dir, err)
		}
	}
	// The run the copy was made of is untouched, and still opens.
	if code, _, stderr := runCLI("runs", "show", "--runs", root, id); code != 0 {
		t.Errorf("runs show %s after the copy was removed: exit %d: %s", id, code, stderr)
	}
}

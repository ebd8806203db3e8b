package cli

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"selmix/runs"
	"selmix/runs/export"
	"selmix/runs/record"
)

// runs export writes the long table and the runs table of the runs
// given, of every run, or of the runs with a tag.
func TestRunsExportTables(t *testing.T) {
	t.Parallel()
	root, ids := copyVizRuns(t)
	if code, _, stderr := runCLI("runs", "tag", ids[1], "keep", "--runs", root); code != 0 {
		t.Fatal(stderr)
	}
	dir := t.TempDir()
	runsIn := func(path string) []string {
		t.Helper()
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		recs, err := csv.NewReader(f).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, rec := range recs[1:] {
			if len(out) == 0 || out[len(out)-1] != rec[0] {
				out = append(out, rec[0])
			}
		}
		return out
	}
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"all", nil, ids},
		{"tagged", []string{"--tag", "keep"}, ids[1:]},
		{"named", []string{"viz-selmix"}, ids[:1]},
	} {
		path := filepath.Join(dir, c.name+".csv")
		pq := filepath.Join(dir, c.name+".parquet")
		args := append([]string{"runs", "export", "--runs", root, "--csv", path, "--parquet", pq}, c.args...)
		code, stdout, stderr := runCLI(args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.name, code, stderr)
		}
		if got := runsIn(path); strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%s: long table has runs %q, want %q", c.name, got, c.want)
		}
		if got := runsIn(filepath.Join(dir, c.name+".runs.csv")); strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%s: runs table has runs %q, want %q", c.name, got, c.want)
		}
		for _, p := range []string{pq, filepath.Join(dir, c.name+".runs.parquet")} {
			if fi, err := os.Stat(p); err != nil || fi.Size() == 0 || !strings.Contains(stdout, p) {
				t.Errorf("%s: %s: %v\n%s", c.name, p, err, stdout)
			}
		}
	}
	for _, args := range [][]string{
		{"runs", "export"},
		{"runs", "export", "--csv", filepath.Join(dir, "x.csv"), "--tag", "a b"},
		{"runs", "export", "--csv", filepath.Join(dir, "x.csv"), "--tag", "none"},
		{"runs", "export", "--csv", filepath.Join(dir, "x.csv"), "--tag", "keep", "viz-selmix"},
		{"runs", "export", "--csv", filepath.Join(dir, "x.csv"), "nope"},
	} {
		if code, _, stderr := runCLI(append(args, "--runs", root)...); code != 2 || !strings.HasPrefix(stderr, "selmix: ") {
			t.Errorf("%v: exit %d, %q; want 2", args, code, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.csv")); err == nil {
		t.Error("a refused export wrote its table")
	}
}

// runs compare --json and --csv print the comparison export.Compare makes.
func TestRunsCompareData(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCLI("runs", "compare", "--json", "--runs", vizRuns, "viz-selmix", "viz-uniform")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var c export.Comparison
	if err := json.Unmarshal([]byte(stdout), &c); err != nil {
		t.Fatal(err)
	}
	sel, _ := runs.Open(vizRuns, "viz-selmix")
	h, err := record.Load(sel)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Runs) != 2 || c.Runs[0].ID != sel.Meta.ID || len(c.Config) == 0 || c.Config[0].Key != "finetune.policy" {
		t.Fatalf("%+v", c)
	}
	for _, s := range c.Val {
		if s.Metric == "psi" && float64(s.Runs[0].Final) != h.Refreshes[len(h.Refreshes)-1].Stats.Psi {
			t.Errorf("final ψ %v, the run's %v", s.Runs[0].Final, h.Refreshes[len(h.Refreshes)-1].Stats.Psi)
		}
	}
	code, stdout, stderr = runCLI("runs", "compare", "--csv", "--runs", vizRuns, "viz-selmix", "viz-uniform")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	recs, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	if err != nil || len(recs) < 10 || recs[1][0] != "config" || len(recs[0]) != 5 {
		t.Errorf("CSV %v: %q", err, recs[:2])
	}
	if code, _, _ := runCLI("runs", "compare", "--csv", "--json", "--runs", vizRuns, "viz-selmix", "viz-uniform"); code != 2 {
		t.Errorf("--csv --json: exit %d, want 2", code)
	}
}

// --csv - is standard output (it wrote a file named "-"), the long table
// only, with the summary on stderr; a FILE that is a symbolic link is
// written through and stays a link (--csv /dev/stdout, as root, replaced
// the /dev/stdout link with a regular file).
func TestRunsExportOutputs(t *testing.T) {
	t.Parallel()
	root, ids := copyVizRuns(t)
	code, stdout, stderr := runCLI("runs", "export", "--runs", root, "--csv", "-", ids[0])
	if code != 0 || !strings.HasPrefix(stdout, "run,step,split,metric,class,class_name,value\n"+ids[0]+",") ||
		stderr != "-\n(no runs table: - is not a file; give a file to get both tables)\n1 runs\n" {
		t.Errorf("--csv -: exit %d, stdout %.200q, stderr %q", code, stdout, stderr)
	}
	if _, err := os.Lstat("-"); err == nil {
		os.Remove("-")
		t.Error(`--csv - wrote a file named "-"`)
	}
	dir := t.TempDir()
	target, link := filepath.Join(dir, "t.csv"), filepath.Join(dir, "l.csv")
	os.WriteFile(target, nil, 0o644)
	os.Symlink("t.csv", link)
	if code, _, stderr := runCLI("runs", "export", "--runs", root, "--csv", link, ids[0]); code != 0 {
		t.Fatalf("--csv LINK: exit %d: %s", code, stderr)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Error("--csv LINK replaced the link")
	}
	if b, _ := os.ReadFile(target); !strings.HasPrefix(string(b), "run,step,") {
		t.Errorf("the link's target holds %.100q", b)
	}
}

// Over the whole root, a run with a damaged events.jsonl is passed over
// with a line, as one with a broken run.json is (it aborted the export);
// named, it is refused (exit 2).
func TestRunsExportSkipsDamaged(t *testing.T) {
	t.Parallel()
	root, ids := copyVizRuns(t)
	log := filepath.Join(root, ids[1], "events.jsonl")
	b, _ := os.ReadFile(log)
	os.WriteFile(log, append([]byte("{oops\n"), b...), 0o644)
	pq := filepath.Join(t.TempDir(), "t.parquet")
	code, stdout, stderr := runCLI("runs", "export", "--runs", root, "--parquet", pq)
	if code != 0 || !strings.HasPrefix(stderr, "selmix: skipped "+ids[1]+" (") || !strings.Contains(stderr, "events.jsonl:1 (byte 0)") || !strings.HasSuffix(stdout, "1 runs\n") {
		t.Errorf("whole root: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, stderr := runCLI("runs", "export", "--runs", root, "--parquet", pq, ids[1]); code != 2 {
		t.Errorf("the damaged run named: exit %d, %s", code, stderr)
	}
}

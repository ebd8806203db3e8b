package runs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestRoot(t *testing.T) {
	tests := []struct {
		name, flag, env, want string
	}{
		{name: "flag wins", flag: "/a", env: "/b", want: "/a"},
		{name: "env", env: "/b", want: "/b"},
		{name: "default", want: "runs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvRoot, tt.env)
			if got := Root(tt.flag); got != tt.want {
				t.Errorf("Root(%q) with $%s=%q = %q, want %q", tt.flag, EnvRoot, tt.env, got, tt.want)
			}
		})
	}
}

func TestOpenResolve(t *testing.T) {
	root := t.TempDir()
	makeRun(t, root, "20260101-0000-aaaa", "alpha")
	makeRun(t, root, "20260101-0000-aabb", "beta")
	makeRun(t, root, "20260102-0000-cccc", "beta")
	makeRun(t, root, "20260103-0000-dddd", "20260101-0000-aaaa") // a name equal to another id
	tests := []struct {
		name    string
		query   string
		wantID  string
		wantErr []string // substrings of the error
	}{
		{name: "exact id", query: "20260101-0000-aaaa", wantID: "20260101-0000-aaaa"},
		{name: "unique prefix", query: "20260101-0000-aab", wantID: "20260101-0000-aabb"},
		{name: "short prefix", query: "20260102", wantID: "20260102-0000-cccc"},
		{name: "unique name", query: "alpha", wantID: "20260101-0000-aaaa"},
		{name: "ambiguous prefix", query: "20260101", wantErr: []string{"ambiguous", "20260101-0000-aaaa", "20260101-0000-aabb", `"beta"`}},
		{name: "ambiguous name", query: "beta", wantErr: []string{"ambiguous", "20260101-0000-aabb", "20260102-0000-cccc"}},
		{name: "missing", query: "zzz", wantErr: []string{`no run "zzz"`, "20260101-0000-aaaa", "20260103-0000-dddd"}},
		{name: "empty", query: "", wantErr: []string{"no run given"}},
		{name: "path escape", query: "../x", wantErr: []string{`no run "../x"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Open(root, tt.query)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("Open(%q) = %s, want an error", tt.query, r.Dir)
				}
				for _, s := range tt.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("Open(%q) error %q does not contain %q", tt.query, err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Open(%q): %v", tt.query, err)
			}
			if r.Meta.ID != tt.wantID || r.Dir != filepath.Join(root, tt.wantID) {
				t.Errorf("Open(%q) = %s (%s), want %s", tt.query, r.Meta.ID, r.Dir, tt.wantID)
			}
		})
	}
	// Among many runs, an unknown id names the five nearest on one line.
	many := t.TempDir()
	for i := range 40 {
		makeRun(t, many, fmt.Sprintf("20260201-%04d-abcd", i), fmt.Sprintf("run-%d", i))
	}
	_, err := Open(many, "20260201-0017-abce")
	want := `no run "20260201-0017-abce" in ` + many + `; nearest: 20260201-0017-abcd ("run-17"), 20260201-0007-abcd ("run-7"), ` +
		`20260201-0010-abcd ("run-10"), 20260201-0011-abcd ("run-11"), 20260201-0012-abcd ("run-12") (and 35 more: selmix runs ls)`
	if err == nil || err.Error() != want {
		t.Errorf("unknown id among 40 runs:\n got %v\nwant %s", err, want)
	}
	// A name is as good a guide as an id.
	if _, err := Open(many, "run-3x"); err == nil || !strings.Contains(err.Error(), `nearest: 20260201-0003-abcd ("run-3")`) {
		t.Errorf("unknown name: %v, want run-3 nearest", err)
	}
	if _, err := Open(many, "2026"); err == nil || strings.Count(err.Error(), "abcd") != 5 || !strings.Contains(err.Error(), "(and 35 more") {
		t.Errorf("ambiguous among 40: %v, want 5 named and 35 more", err)
	}
	if _, err := Open(t.TempDir(), "x"); err == nil || !strings.Contains(err.Error(), "has no runs") {
		t.Errorf("Open in an empty root = %v, want a has-no-runs error", err)
	}
}

func TestListToleratesBroken(t *testing.T) {
	root := t.TempDir()
	good := mustCreate(t, root, "good", Meta{})
	defer good.Close()
	for name, content := range map[string]string{"badjson": "{not json", "noid": `{"status":"running","created":"2026-01-01T00:00:00Z"}`} {
		if err := os.MkdirAll(filepath.Join(root, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name, metaName), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Creations an older selmix had cut off before run.json (while it
	// wrote run.json; while it wrote config.toml): broken runs.
	os.Mkdir(filepath.Join(root, "empty"), 0o755)
	os.WriteFile(filepath.Join(root, "empty", configName), []byte("seed = 1\n"), 0o644)
	os.Mkdir(filepath.Join(root, "cutmeta"), 0o755)
	os.WriteFile(filepath.Join(root, "cutmeta", ".run.json.tmp-x"), []byte(`{"id":`), 0o644)
	os.Mkdir(filepath.Join(root, "cutconfig"), 0o755)
	os.WriteFile(filepath.Join(root, "cutconfig", lockName), nil, 0o644)
	os.WriteFile(filepath.Join(root, "cutconfig", ".config.toml.tmp-x"), []byte("seed"), 0o644)
	// A copy of a run's folder keeps the run's id.
	if err := os.CopyFS(filepath.Join(root, "backup"), os.DirFS(good.Dir())); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(root, ".hidden"), 0o755)
	// A creation under way (or cut off): hidden until it is complete.
	os.Mkdir(filepath.Join(root, ".new-"+good.ID()+"-0000"), 0o755)
	os.WriteFile(filepath.Join(root, ".new-"+good.ID()+"-0000", configName), []byte("seed = 1\n"), 0o644)
	// Not runs at all: a source folder (./runs is also a Go package).
	os.Mkdir(filepath.Join(root, "record"), 0o755)
	os.WriteFile(filepath.Join(root, "record", "record.go"), []byte("package record\n"), 0o644)
	os.Mkdir(filepath.Join(root, "bare"), 0o755)
	os.WriteFile(filepath.Join(root, "notes.txt"), []byte("hi"), 0o644)

	runs, err := List(root)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	got := map[string]string{}
	for _, r := range runs {
		got[r.Meta.ID] = r.Meta.Status
	}
	want := map[string]string{
		good.ID():   StatusRunning,
		"badjson":   "broken: " + filepath.Join(root, "badjson", metaName) + ": invalid run metadata",
		"noid":      "broken: " + filepath.Join(root, "noid", metaName) + ": invalid run metadata: id is empty",
		"empty":     "broken: " + filepath.Join(root, "empty") + " has no run.json: a run whose creation was cut off, or not a run (selmix runs rm empty --yes removes it)",
		"cutmeta":   "broken: " + filepath.Join(root, "cutmeta") + " has no run.json",
		"cutconfig": "broken: " + filepath.Join(root, "cutconfig") + " has no run.json",
		"backup": "broken: folder " + filepath.Join(root, "backup") + " holds run " + good.ID() + " (its run.json says so): a copied folder keeps its id; rename the folder to " +
			good.ID() + `, or to keep it as a copy set "id" in ` + filepath.Join(root, "backup", metaName) + ` to "backup"`,
	}
	if len(got) != len(want) {
		t.Errorf("List = %v, want runs %v", got, want)
	}
	for id, prefix := range want {
		if !strings.HasPrefix(got[id], prefix) {
			t.Errorf("run %s status %q, want prefix %q", id, got[id], prefix)
		}
	}
	for _, r := range runs {
		if r.Meta.ID == good.ID() && (!r.Live || r.Broken()) {
			t.Errorf("good run: Live %v, Broken %v; want live, not broken", r.Live, r.Broken())
		}
	}
	if _, err := Open(root, "badjson"); err == nil || !strings.Contains(err.Error(), "invalid run metadata") {
		t.Errorf("Open(broken) = %v, want the metadata error", err)
	}
	// Whatever opens a run refuses the copy as damage, rather than act on
	// the run of its id.
	if _, err := Open(root, "backup"); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "a copied folder keeps its id") {
		t.Errorf("Open(copy) = %v, want damage: a copied folder", err)
	}
	if _, err := OpenWriter(root, "backup"); !errors.Is(err, ErrDamaged) {
		t.Errorf("OpenWriter(copy) = %v, want damage", err)
	}
	if _, err := Retag(root, "backup", []string{"x"}, nil, nil); !errors.Is(err, ErrDamaged) {
		t.Errorf("Retag(copy) = %v, want damage", err)
	}
	for _, id := range []string{"empty", "cutmeta", "cutconfig", "backup", "badjson"} {
		if r, ok := Unreadable(root, id); !ok || r.Meta.ID != id || !r.Broken() {
			t.Errorf("Unreadable(%s) = %+v, %v; want it, broken", id, r, ok)
		}
	}
	for _, id := range []string{good.ID(), "record", "bare", "nothing"} {
		if r, ok := Unreadable(root, id); ok {
			t.Errorf("Unreadable(%s) = %+v; want none", id, r)
		}
	}
	if runs, err := List(filepath.Join(root, "missing")); err != nil || len(runs) != 0 {
		t.Errorf("List(missing root) = %v, %v; want empty", runs, err)
	}
}

func TestRemove(t *testing.T) {
	root := t.TempDir()
	w := mustCreate(t, root, "doomed", Meta{})
	mustAppend(t, w, 2)
	if err := w.WriteCheckpoint(1, []byte("c")); err != nil {
		t.Fatal(err)
	}
	err := Remove(root, w.ID())
	if err == nil || !strings.Contains(err.Error(), "being written by pid") {
		t.Fatalf("Remove(live) = %v, want a refusal naming the pid", err)
	}
	if _, err := os.Stat(w.Dir()); err != nil {
		t.Fatalf("live run dir after refused Remove: %v", err)
	}
	if _, err := w.Append("still", 2, nil, true); err != nil {
		t.Errorf("writer after refused Remove: %v", err)
	}
	w.Close()
	if err := Remove(root, "doomed"); err != nil {
		t.Fatalf("Remove by name: %v", err)
	}
	ents, _ := os.ReadDir(root)
	if len(ents) != 0 {
		t.Errorf("root after Remove holds %v, want nothing", ents)
	}
	if err := Remove(root, "doomed"); err == nil {
		t.Errorf("Remove of a removed run = nil, want an error")
	}

	// A broken run can be removed too.
	os.Mkdir(filepath.Join(root, "junk"), 0o755)
	if err := Remove(root, "junk"); err != nil {
		t.Errorf("Remove(broken) = %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "junk")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("broken run still there: %v", err)
	}
}

// A FIFO in place of a run's lock (or run.json) does not block listing:
// the run is shown, not live, and a FIFO run.json makes it broken.
func TestListRefusesSpecialFiles(t *testing.T) {
	root := t.TempDir()
	w := mustCreate(t, root, "fifo", Meta{})
	w.Close()
	lock := filepath.Join(w.Dir(), lockName)
	os.Remove(lock)
	if err := syscall.Mkfifo(lock, 0o644); err != nil {
		t.Fatal(err)
	}
	all, err := List(root)
	if err != nil || len(all) != 1 || all[0].Live || all[0].Broken() {
		t.Fatalf("List = %+v, %v; want the run, not live", all, err)
	}
	meta := filepath.Join(w.Dir(), metaName)
	os.Remove(meta)
	if err := syscall.Mkfifo(meta, 0o644); err != nil {
		t.Fatal(err)
	}
	all, err = List(root)
	if err != nil || len(all) != 1 || !strings.Contains(all[0].Meta.Status, "is not a regular file (a named pipe)") {
		t.Fatalf("List = %+v, %v; want the run broken: not a regular file", all, err)
	}
}

package experiment

import (
	"reflect"
	"strings"
	"testing"
)

// record.checkpoint_every was finetune.checkpoint_every: the old name
// still reads, in a configuration, an override and a run's recorded
// config.toml, and means the same; `selmix config` shows the new one.
func TestCheckpointEveryAlias(t *testing.T) {
	r := Default().Render()
	if !strings.Contains(r, "\n[record]\nmatrices_every = 1") || !strings.Contains(r, "\ncheckpoint_every = 5 ") ||
		strings.Index(r, "checkpoint_every") < strings.Index(r, "[record]") {
		t.Errorf("selmix config does not show checkpoint_every under [record]:\n%s", r)
	}
	for _, c := range []struct {
		name string
		read func() (Config, error)
	}{
		{"file, new key", func() (Config, error) { return Parse("[record]\ncheckpoint_every = 3\n", "c.toml") }},
		{"file, old key", func() (Config, error) { return Parse("[finetune]\ncheckpoint_every = 3\nsteps = 40\n", "c.toml") }},
		{"file, old dotted key", func() (Config, error) { return Parse("finetune.checkpoint_every = 3\n", "c.toml") }},
		{"--set, new key", func() (Config, error) { return Load("", []string{"record.checkpoint_every=3"}) }},
		{"--set, old key", func() (Config, error) { return Load("", []string{"finetune.checkpoint_every=3"}) }},
		{"recorded, old key", func() (Config, error) {
			return ParseRecorded(strings.Replace(oldRecorded(), "[finetune]\n", "[finetune]\ncheckpoint_every = 3\n", 1), "config.toml")
		}},
		{"recorded, shown", func() (Config, error) {
			return ReadRecorded(strings.Replace(oldRecorded(), "[finetune]\n", "[finetune]\ncheckpoint_every = 3\n", 1), "config.toml")
		}},
	} {
		got, err := c.read()
		if err != nil || got.Record.CheckpointEvery != 3 {
			t.Errorf("%s: record.checkpoint_every = %d (%v), want 3", c.name, got.Record.CheckpointEvery, err)
		}
	}
	for _, c := range []struct{ name, text, want string }{
		{"both", "[finetune]\ncheckpoint_every = 3\n[record]\ncheckpoint_every = 4\n", "c.toml: both record.checkpoint_every and finetune.checkpoint_every, its old name, are set"},
		{"wrong type", "[finetune]\ncheckpoint_every = \"x\"\n", "c.toml: finetune.checkpoint_every (now record.checkpoint_every): "},
		{"bad value", "[finetune]\ncheckpoint_every = 0\n", "record.checkpoint_every: want ≥ 1, got 0"},
	} {
		if _, err := Parse(c.text, "c.toml"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if strings.Contains(strings.Join(Keys(), " "), "finetune.checkpoint_every") {
		t.Error("Keys lists the old name")
	}
}

// oldRecorded is a config.toml as a run recorded it before
// record.checkpoint_every: its [finetune] held it.
func oldRecorded() string {
	var out []string
	for _, l := range strings.Split(Default().Render(), "\n") {
		if !strings.HasPrefix(l, "checkpoint_every") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// A run's config.toml is read for showing (ReadRecorded) even where it
// would not run: a key of a newer selmix is passed over, a value this one
// refuses kept. Not TOML, or a value of the wrong type, is not a valid
// configuration; ParseRecorded refuses all four.
func TestReadRecorded(t *testing.T) {
	for _, c := range []struct {
		name, text string
		read       bool // ReadRecorded reads it
	}{
		{"a newer key", "seed = 4\n[finetune]\nnew_knob = 2\n", true},
		{"a refused value", "seed = 4\n[finetune]\npolicy = \"someday\"\n", true},
		{"not TOML", "seed = = 4\n", false},
		{"a wrong type", "seed = 4\n[record]\nmatrices_every = \"x\"\n", false},
	} {
		got, err := ReadRecorded(c.text, "run/config.toml")
		if c.read && (err != nil || got.Seed != 4) {
			t.Errorf("%s: ReadRecorded: seed %d, %v", c.name, got.Seed, err)
		}
		if !c.read && (err == nil || !strings.HasPrefix(err.Error(), "run/config.toml: not a valid configuration: ")) {
			t.Errorf("%s: ReadRecorded: %v, want not a valid configuration", c.name, err)
		}
		if _, err := ParseRecorded(c.text, "run/config.toml"); err == nil {
			t.Errorf("%s: ParseRecorded accepted it", c.name)
		}
	}
	// Keys it does not name take what ran then, as ParseRecorded's do.
	got, err := ReadRecorded("seed = 4\n", "config.toml")
	want, werr := ParseRecorded("seed = 4\n", "config.toml")
	if err != nil || werr != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ReadRecorded %+v (%v), ParseRecorded %+v (%v)", got, err, want, werr)
	}
}

// Table is what config.toml holds, each value as TOML reads it.
func TestTable(t *testing.T) {
	c := Default()
	c.Worker.Command = []string{"python3", "w.py"}
	m := c.Table()
	ft, _ := m["finetune"].(map[string]any)
	rec, _ := m["record"].(map[string]any)
	w, _ := m["worker"].(map[string]any)
	if m["seed"] != int64(1) || ft["objective"] != "min-recall" || ft["cov_margin"] != "auto" || rec["checkpoint_every"] != int64(5) ||
		!reflect.DeepEqual(w["command"], []any{"python3", "w.py"}) || ft["checkpoint_every"] != nil {
		t.Errorf("Table = %v", m)
	}
	back, err := ParseRecorded(c.Render(), "config.toml")
	if err != nil || !reflect.DeepEqual(back.Table(), m) {
		t.Errorf("the table of the config read back differs (%v)", err)
	}
}

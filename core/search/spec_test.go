package search

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"selmix/core/experiment"
)

const gridSpec = `
name = "grid"

[base]
"finetune.steps" = 300
finetune.refresh = 25
record.plots = false

[axes]
"finetune.objective" = ["min-recall", "hmean"]
"finetune.s" = [5.0, 10]
seed = [1, 2, 3]
`

func TestParseProduct(t *testing.T) {
	s, err := Parse([]byte(gridSpec), "grid.toml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "grid" {
		t.Errorf("name %q", s.Name)
	}
	wantBase := []Setting{{"finetune.refresh", "25"}, {"finetune.steps", "300"}, {"record.plots", "false"}}
	if !reflect.DeepEqual(s.Base, wantBase) {
		t.Errorf("base\n got %v\nwant %v", s.Base, wantBase)
	}
	wantAxes := []Axis{
		{Key: "finetune.objective", Values: []string{`"min-recall"`, `"hmean"`}},
		{Key: "finetune.s", Values: []string{"5.0", "10"}},
		{Key: "seed", Values: []string{"1", "2", "3"}},
	}
	if !reflect.DeepEqual(s.Axes, wantAxes) {
		t.Errorf("axes (in declared order)\n got %v\nwant %v", s.Axes, wantAxes)
	}
	ms, err := s.Members("grid-abcd")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 12 {
		t.Fatalf("%d members, want 2×2×3 = 12", len(ms))
	}
	// The last axis varies fastest.
	want := [][]string{
		{`"min-recall"`, "5.0", "1"}, {`"min-recall"`, "5.0", "2"}, {`"min-recall"`, "5.0", "3"},
		{`"min-recall"`, "10", "1"},
	}
	for i, w := range want {
		if !reflect.DeepEqual(ms[i].Vary, w) {
			t.Errorf("member %d values %v, want %v", i, ms[i].Vary, w)
		}
	}
	last := ms[11]
	if last.Run != "grid-abcd-11" {
		t.Errorf("run name %q", last.Run)
	}
	wantSets := []string{"finetune.refresh=25", "finetune.steps=300", "record.plots=false",
		`finetune.objective="hmean"`, "finetune.s=10", "seed=3", `name="grid-abcd-11"`}
	if !reflect.DeepEqual(last.Sets, wantSets) {
		t.Errorf("sets\n got %v\nwant %v", last.Sets, wantSets)
	}
	// The sets build the configuration the spec describes.
	c, err := experiment.Load("", last.Sets)
	if err != nil {
		t.Fatal(err)
	}
	if c.Finetune.Objective != "hmean" || c.Finetune.S != 10 || c.Seed != 3 || c.Finetune.Steps != 300 || c.Record.Plots || c.Name != "grid-abcd-11" {
		t.Errorf("member 11 config: %+v", c)
	}
}

func TestParseRowsTimesAxes(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.toml")
	if err := os.WriteFile(base, []byte("[finetune]\nsteps = 40\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := `
base_config = "base.toml"
[[rows]]
finetune.objective = "min-recall"
finetune.policy = "uniform"
[[rows]]
"finetune.objective" = "mean-recall@cov"
[axes]
seed = [7, 8]
`
	s, err := Parse([]byte(spec), filepath.Join(dir, "rows.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "rows" || s.BaseConfig != base {
		t.Errorf("name %q (want the file's stem), base_config %q (want %q)", s.Name, s.BaseConfig, base)
	}
	if got, want := s.Columns(), []string{"finetune.objective", "finetune.policy", "seed"}; !reflect.DeepEqual(got, want) {
		t.Errorf("columns %v, want %v", got, want)
	}
	ms, err := s.Members("rows-0000")
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, m := range ms {
		got = append(got, m.Vary)
	}
	want := [][]string{
		{`"min-recall"`, `"uniform"`, "7"}, {`"min-recall"`, `"uniform"`, "8"},
		{`"mean-recall@cov"`, "", "7"}, {`"mean-recall@cov"`, "", "8"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("members\n got %v\nwant %v", got, want)
	}
	c, err := experiment.Load(s.BaseConfig, ms[3].Sets)
	if err != nil {
		t.Fatal(err)
	}
	if c.Finetune.Steps != 40 || c.Finetune.Objective != "mean-recall@cov" || c.Finetune.Policy != "selmix" || c.Seed != 8 {
		t.Errorf("member 3: steps %d objective %s policy %s seed %d", c.Finetune.Steps, c.Finetune.Objective, c.Finetune.Policy, c.Seed)
	}
}

func TestParseSlurm(t *testing.T) {
	s, err := Parse([]byte(`[axes]
seed = [1]
[slurm]
partition = "gpu"
time = "02:00:00"
gres = "gpu:1"
cpus_per_task = 4
mem = "16G"
max_parallel = 8
signal_seconds = 300
requeue = true
extra = ["--account=lab", "--qos=normal"]
`), "s.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := &Slurm{Partition: "gpu", Time: "02:00:00", Gres: "gpu:1", CPUsPerTask: 4, Mem: "16G", MaxParallel: 8,
		SignalSeconds: 300, Requeue: true, Extra: []string{"--account=lab", "--qos=normal"}}
	if !reflect.DeepEqual(s.Slurm, want) {
		t.Errorf("slurm\n got %+v\nwant %+v", s.Slurm, want)
	}
}

// Every bad spec is refused with one message that names the file, where
// in it and the key.
func TestParseErrors(t *testing.T) {
	cases := []struct{ name, spec, want string }{
		{"toml", "[axes\n", "bad.toml: toml:"},
		{"unknown top key", "axis = 1\n[axes]\nseed=[1]", "bad.toml: unknown key axis"},
		{"no members", "[base]\nseed = 1", "bad.toml: no members"},
		{"unknown config key", "[axes]\n\"finetune.sss\" = [1]", `bad.toml: [axes] "finetune.sss": --set finetune.sss: unknown key finetune.sss`},
		{"unknown base key", "[base]\nfinetune.stepz = 3\n[axes]\nseed=[1]", `bad.toml: [base] "finetune.stepz"`},
		{"bad row key", "[[rows]]\nfinetune.objective = \"hmean\"\n[[rows]]\ndata.nope = 1", `bad.toml: [[rows]] 2 "data.nope"`},
		{"wrong type", "[axes]\nseed = [\"one\"]", `bad.toml: [axes] "seed"`},
		{"axis not array", "[axes]\nseed = 3", `bad.toml: [axes] "seed": want a non-empty array`},
		{"empty axis", "[axes]\nseed = []", `bad.toml: [axes] "seed": want a non-empty array`},
		{"name reserved", "[axes]\nname = [\"a\"]", `bad.toml: [axes] "name": is set by the sweep`},
		{"row and axis", "[[rows]]\nseed = 1\n[axes]\nseed = [2]", `bad.toml: [[rows]] 1 "seed": is also an axis`},
		{"empty row", "[[rows]]\n", "bad.toml: [[rows]] 1 is empty"},
		{"table value", "[axes]\nseed = [{a = 1}]", `bad.toml: [axes] "seed": a table is not a configuration value`},
		{"date value", "[axes]\nseed = [1979-05-27]", `bad.toml: [axes] "seed": unsupported value`},
		{"bad name", "name = \"a b\"\n[axes]\nseed=[1]", `bad.toml: name: "a b"`},
		{"too many", "[axes]\nseed = [" + strings.Repeat("1,", 101) + "1]\n\"finetune.s\" = [" + strings.Repeat("1.0,", 99) + "1.0]", "bad.toml: 10200 members; at most 10000"},
		{"slurm unknown", "[axes]\nseed=[1]\n[slurm]\npartitio = \"x\"", "bad.toml: unknown key slurm.partitio"},
		{"slurm type", "[axes]\nseed=[1]\n[slurm]\ncpus_per_task = \"4\"", "bad.toml: toml:"},
		{"slurm space", "[axes]\nseed=[1]\n[slurm]\npartition = \"a b\"", `bad.toml: [slurm] partition "a b"`},
		{"slurm negative", "[axes]\nseed=[1]\n[slurm]\nmax_parallel = -1", "bad.toml: [slurm] max_parallel -1"},
		{"slurm extra", "[axes]\nseed=[1]\n[slurm]\nextra = [\"account=x\"]", `bad.toml: [slurm] extra "account=x"`},
		{"slurm array", "[axes]\nseed=[1]\n[slurm]\nextra = [\"--array=1\"]", `bad.toml: [slurm] extra "--array=1"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.spec), "bad.toml")
			if err == nil {
				t.Fatalf("accepted:\n%s", c.spec)
			}
			if !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("error\n got %q\nwant prefix %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}

// A member whose configuration is bad as a whole (each key fine alone) is
// named with its row and values.
func TestMembersInvalid(t *testing.T) {
	s, err := Parse([]byte(`
[[rows]]
"data.source" = "features"
[[rows]]
"finetune.objective" = "hmean"
[axes]
seed = [1, 2]
`), "m.toml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Members("m-0000")
	want := "m.toml: member 0 ([[rows]] 1, seed=1): data.train: required when data.source = \"features\""
	if err == nil || err.Error() != want {
		t.Errorf("error\n got %v\nwant %s", err, want)
	}
	s.BaseConfig = filepath.Join(t.TempDir(), "missing.toml")
	if _, err := s.Members("m-0000"); err == nil || !strings.HasPrefix(err.Error(), "m.toml: base_config: ") {
		t.Errorf("missing base_config: %v", err)
	}
}

func TestRenderRoundTrip(t *testing.T) {
	for _, v := range []any{"a \"quoted\"\n\tstring ü <&>", int64(-3), 1e-5, 10.0, 0.1, true, []any{int64(256), int64(128)}, []any{"x", 1.5}} {
		text, err := render(v)
		if err != nil {
			t.Fatal(err)
		}
		var back struct{ V any }
		if _, err := toml.Decode("V = "+text, &back); err != nil {
			t.Fatalf("%v rendered as %s: %v", v, text, err)
		}
		if !reflect.DeepEqual(back.V, v) {
			t.Errorf("%#v rendered as %s reads back as %#v", v, text, back.V)
		}
	}
	if got := Display(`"min-recall"`); got != "min-recall" {
		t.Errorf("Display = %q", got)
	}
}

package experiment

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"selmix/core/loop"
	"selmix/core/metric"
)

func TestDefaultIsValid(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	tc := c.Train()
	if tc.Steps != 2000 || tc.Batch != 128 || tc.LR != 3e-3 || tc.BetaMin != 0.6 {
		t.Errorf("default engine config %+v does not match the paper's supervised defaults", tc)
	}
	// The built-in experiment's four changes (configs/paper.toml undoes them).
	if tc.Refresh != 10 || tc.Adapt != loop.AdaptLR || tc.CovMargin != loop.MarginAuto || tc.S != 1 {
		t.Errorf("built-in refresh %d, adapt %v, cov_margin %v, s %v; want 10, lr, auto, 1", tc.Refresh, tc.Adapt, tc.CovMargin, tc.S)
	}
	if d := loop.DefaultConfig(); d.Refresh != 50 || d.Adapt != loop.AdaptNone || d.CovMargin != 0 || d.S != 10 {
		t.Errorf("engine defaults refresh %d, adapt %v, cov_margin %v, s %v; want the paper's 50, none, 0, 10", d.Refresh, d.Adapt, d.CovMargin, d.S)
	}
	if tc.WeightDecay != 5e-4 || tc.Momentum != 0.9 {
		t.Errorf("weight decay %v, momentum %v", tc.WeightDecay, tc.Momentum)
	}
}

func TestLoadOverlayAndSet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "exp.toml")
	os.WriteFile(path, []byte("seed = 7\n[finetune]\nobjective = \"hmean\"\nsteps = 300\n"), 0o644)
	c, err := Load(path, []string{"finetune.s=20", "finetune.policy=uniform", "model.hidden=[64, 32]", "name=my run", "finetune.objective=hmean"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Seed != 7 || c.Finetune.Objective != "hmean" || c.Finetune.Steps != 300 || c.Finetune.S != 20 ||
		c.Finetune.Policy != "uniform" || !reflect.DeepEqual(c.Model.Hidden, []int{64, 32}) || c.Name != "my run" {
		t.Errorf("got %+v", c)
	}
	if c.Finetune.Refresh != 10 {
		t.Errorf("unset key lost its default: refresh = %d", c.Finetune.Refresh)
	}
}

// Keys lists every key `selmix config` prints, and only those.
func TestKeys(t *testing.T) {
	var want []string
	section := ""
	for _, l := range strings.Split(DefaultTOML(), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "["):
			section = strings.Trim(l, "[]") + "."
		case l != "" && !strings.HasPrefix(l, "#"):
			k, _, _ := strings.Cut(l, " = ")
			want = append(want, section+k)
		}
	}
	if got := Keys(); !reflect.DeepEqual(got, want) {
		t.Errorf("Keys:\n got %v\nwant %v", got, want)
	}
}

func TestConfigErrors(t *testing.T) {
	cases := []struct {
		name string
		text string
		sets []string
		want string
	}{
		{"unknown key", "[finetune]\nsteep = 3\n", nil, "exp.toml: unknown key finetune.steep (did you mean finetune.steps?)"},
		{"unknown section", "[optim]\nlr = 3\n", nil, "unknown key optim"},
		{"wrong type", "[finetune]\nsteps = \"many\"\n", nil, "exp.toml:"},
		{"bad objective", "[finetune]\nobjective = \"best\"\n", nil, "finetune.objective"},
		{"bad source", "[data]\nsource = \"cifar\"\n", nil, "data.source"},
		{"features need files", "[data]\nsource = \"features\"\n", nil, "data.train: required"},
		{"bad set", "", []string{"finetune.s"}, "want section.key=value"},
		{"unknown set", "", []string{"finetune.bogus=1"}, "unknown key finetune.bogus"},
		// A bare word is a string even under a mistyped key: the key is the
		// mistake, and the error says so (issue 26: it was a TOML parse error).
		{"unknown set, bare word", "", []string{"finetune.objectiv=hmean"}, "--set finetune.objectiv: unknown key finetune.objectiv (did you mean finetune.objective?)"},
		// An escape inside the key is shown, quoted: stripped of it, the
		// line read "unknown key finetune.steps", a valid key.
		{"unknown set, escape in the key", "", []string{"finetune.st\x1b[0meps=5"}, `--set "finetune.st\x1b[0meps": unknown key "finetune.st\x1b[0meps"`},
		{"bad alpha", "", []string{"finetune.alpha=2"}, "finetune.alpha"},
		{"bad steps", "", []string{"finetune.steps=0"}, "finetune.steps"},
		{"negative seed", "", []string{"seed=-1"}, "seed: want an integer ≥ 0, got -1"},
		{"worker timeout", "", []string{"worker.timeout=0"}, "worker: timeout"},
		{"plots not a bool", "", []string{"record.plots=3"}, "record.plots"},
		{"bad matrices_every", "", []string{"record.matrices_every=0"}, "record.matrices_every: want ≥ 1, got 0"},
		{"csst nonlinear", "", []string{"finetune.policy=csst", "finetune.objective=hmean@cov"}, "finetune.policy: csst optimises objectives linear in the recalls; hmean@cov is not"},
		{"csst pretrain nonlinear", "", []string{"pretrain.loss=csst", "finetune.objective=gmean"}, "pretrain.loss: csst optimises objectives linear in the recalls; gmean is not"},
	}
	for _, c := range cases {
		path := filepath.Join(t.TempDir(), "exp.toml")
		os.WriteFile(path, []byte(c.text), 0o644)
		_, err := Load(path, c.sets)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	c := Default()
	c.Seed = 42
	c.Finetune.Objective = "mean-recall@cov"
	s, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(s, "resolved")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, c) {
		t.Errorf("round trip changed the config:\n got %+v\nwant %+v", back, c)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(DefaultTOML())
	f.Add("[finetune]\ns = 3\n")
	f.Add("seed = -1")
	f.Fuzz(func(t *testing.T, text string) {
		c, err := Parse(text, "fuzz.toml")
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse accepted a config Validate rejects: %v", err)
		}
	})
}

// Every objective is named where people read about them: README, the
// method, and the configuration selmix config prints.
func TestEveryObjectiveDocumented(t *testing.T) {
	docs := map[string]string{"selmix config": DefaultTOML()}
	for _, f := range []string{"../../README.md", "../../docs/method.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs[f] = string(b)
	}
	for name, text := range docs {
		for _, o := range metric.Objectives() {
			if !strings.Contains(text, string(o)) {
				t.Errorf("%s does not name the objective %s", name, o)
			}
		}
	}
}

// Every key of the configuration is documented (a doc tag, rendered as a
// comment by selmix config).
func TestEveryKeyDocumented(t *testing.T) {
	for _, l := range strings.Split(DefaultTOML(), "\n") {
		if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "[") {
			continue
		}
		if !strings.Contains(l, " # ") {
			t.Errorf("undocumented key: %s", l)
		}
	}
}

// The built-in experiment adapts the step (finetune.adapt = lr); the
// paper's exact settings are one documented switch away:
// configs/paper.toml gives back every fine-tuning default of the paper.
func TestPaperPreset(t *testing.T) {
	if got := Default().Finetune.Adapt; got != loop.AdaptLR {
		t.Errorf("built-in finetune.adapt = %q, want lr", got)
	}
	c, err := Load(filepath.Join("..", "..", "configs", "paper.toml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Finetune.Hyper, loop.DefaultHyper(); got != want {
		t.Errorf("configs/paper.toml hyperparameters\n got %+v\nwant the paper's %+v", got, want)
	}
	want := loop.DefaultConfig()
	want.Seed, want.Plugin = uint64(c.Seed), c.Record.Plugin // not fine-tuning settings
	if got := c.Train(); got != want {
		t.Errorf("configs/paper.toml fine-tuning\n got %+v\nwant the paper's %+v", got, want)
	}
}

// WorkerSets makes overrides Load reads back: the command, and the
// directory, this one unless the other overrides name one.
func TestWorkerSets(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	command := []string{"python3", "w.py", "--root", `a "quoted" dir`}
	for _, c := range []struct {
		name    string
		sets    []string
		wantDir string
	}{
		{"this directory", []string{"finetune.s=2"}, wd},
		{"a worker.dir given", []string{" worker.dir = \"/elsewhere\""}, "/elsewhere"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws, err := WorkerSets(command, c.sets)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := Load("", append(append([]string{}, c.sets...), ws...))
			if err != nil {
				t.Fatalf("Load of %q: %v", ws, err)
			}
			if !reflect.DeepEqual(cfg.Worker.Command, command) || cfg.Worker.Dir != c.wantDir {
				t.Errorf("worker %q in %q; want %q in %q (overrides %q)", cfg.Worker.Command, cfg.Worker.Dir, command, c.wantDir, ws)
			}
		})
	}
}

// A configuration file that leaves cov_margin out takes the built-in
// experiment's auto; a run's recorded config.toml that lacks it predates
// the key and takes the engine's default, what ran then (0, the paper).
// A bad cov_conf or cov_margin is refused naming the key.
func TestCovMarginDefaults(t *testing.T) {
	if got := Default().Finetune.CovMargin; got != loop.MarginAuto {
		t.Errorf("built-in cov_margin = %v, want auto", got)
	}
	user, err := Parse("[finetune]\nobjective = \"mean-recall@cov\"\n", "user.toml")
	if err != nil || user.Finetune.CovMargin != loop.MarginAuto {
		t.Errorf("a user's file without cov_margin: %v, %v; want auto", user.Finetune.CovMargin, err)
	}
	old := Default()
	old.Finetune.CovMargin = loop.MarginAuto
	var kept []string
	for _, l := range strings.Split(old.Render(), "\n") {
		if !strings.HasPrefix(l, "cov_margin") && !strings.HasPrefix(l, "cov_conf") {
			kept = append(kept, l)
		}
	}
	rec, err := ParseRecorded(strings.Join(kept, "\n"), "config.toml")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Finetune.CovMargin != 0 || rec.Finetune.CovConf != loop.DefaultHyper().CovConf {
		t.Errorf("a recorded config without the keys: cov_margin %v, cov_conf %v; want the engine's 0, %v", rec.Finetune.CovMargin, rec.Finetune.CovConf, loop.DefaultHyper().CovConf)
	}
	if rec.Finetune.Adapt != loop.AdaptLR {
		t.Errorf("a recorded key (adapt = lr) read as %v", rec.Finetune.Adapt)
	}
	full, err := ParseRecorded(old.Render(), "config.toml")
	if err != nil || full.Finetune.CovMargin != loop.MarginAuto {
		t.Errorf("a recorded config with cov_margin = auto: %v, %v", full.Finetune.CovMargin, err)
	}
	for _, tc := range []struct{ set, key string }{
		{"finetune.cov_conf=1", "finetune.cov_conf"},
		{"finetune.cov_conf=0", "finetune.cov_conf"},
		{"finetune.cov_margin=-0.01", "finetune.cov_margin"},
		{"finetune.cov_margin=sometimes", "finetune.cov_margin"},
		{"finetune.cov_margin=1e300", "finetune.cov_margin: want auto or a number in [0, 1]"},
		{"finetune.cov_margin=1.5", "finetune.cov_margin: want auto or a number in [0, 1]"},
	} {
		if _, err := Load("", []string{tc.set}); err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("--set %s: %v, want an error naming %s", tc.set, err, tc.key)
		}
	}
	if c, err := Load("", []string{"finetune.cov_margin=1"}); err != nil || c.Finetune.CovMargin != 1 {
		t.Errorf("--set finetune.cov_margin=1 (the bound): %v, %v", c.Finetune.CovMargin, err)
	}
	c, err := Load("", []string{"finetune.cov_margin=0.004"})
	if err != nil || c.Finetune.CovMargin != 0.004 {
		t.Errorf("--set finetune.cov_margin=0.004: %v, %v", c.Finetune.CovMargin, err)
	}
}

// data.builtin: a recorded configuration that does not name it ran on the
// first embedded split (200 test images per class); a new one names 2;
// anything else is refused naming the key.
func TestBuiltinSplitVersion(t *testing.T) {
	if d := Default(); d.Data.Builtin != 2 || !strings.Contains(d.Render(), "builtin = 2") {
		t.Errorf("default data.builtin %d, want 2 and written out", d.Data.Builtin)
	}
	old := strings.Replace(Default().Render(), "builtin = 2", "", 1)
	c, err := ParseRecorded(old, "config.toml")
	if err != nil || c.Data.Builtin != 1 {
		t.Errorf("recorded config without data.builtin: %d (%v), want 1", c.Data.Builtin, err)
	}
	if c, err := ParseRecorded(Default().Render(), "config.toml"); err != nil || c.Data.Builtin != 2 {
		t.Errorf("recorded config with data.builtin = 2: %d (%v)", c.Data.Builtin, err)
	}
	for _, set := range []string{"data.builtin=3", "data.builtin=0", "data.test_per_class=-1"} {
		_, err := Load("", []string{set})
		if key := strings.SplitN(set, "=", 2)[0]; err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: %v, want an error naming %s", set, err, key)
		}
	}
}

// A key of the right name in another section is suggested: run.name
// means name (issue 46: "unknown key run.name" said no more).
func TestUnknownKeySameLeaf(t *testing.T) {
	for _, c := range []struct{ key, want string }{
		{"run.name", "unknown key run.name (did you mean name?)"},
		{"objective", "unknown key objective (did you mean finetune.objective?)"},
		{"finetune.stepz", "unknown key finetune.stepz (did you mean finetune.steps?)"},
		{"nothing.like.it", "unknown key nothing.like.it"},
	} {
		if got := unknownKey(c.key); got != c.want {
			t.Errorf("unknownKey(%q) = %q, want %q", c.key, got, c.want)
		}
	}
}

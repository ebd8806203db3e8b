package experiment

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"selmix/core/npy"
)

// data.class_names names the classes of any data source; a names file
// overrides the names a features archive holds.
func TestLoadDataClassNames(t *testing.T) {
	dir := t.TempDir()
	p := func(s string) string { return filepath.Join(dir, s) }
	write := func(name, text string) string {
		if err := os.WriteFile(p(name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p(name)
	}
	ten := write("ten.txt", "c0\nc1\nc2\nc3\nc4\nc5\nc6\nc7\nc8\nc9\n")
	three := write("three.txt", "cat\ndog\nsea lion\n")

	x := npy.Entry{Name: "x", Shape: []int{3, 2}, Data: []float32{1, 2, 3, 4, 5, 6}}
	y := npy.Entry{Name: "y", Shape: []int{3}, Data: []int64{0, 1, 2}}
	if err := npy.WriteNPZ(p("eval.npz"), x, y); err != nil {
		t.Fatal(err)
	}
	if err := npy.WriteNPZ(p("train.npz"), x, y, npy.Entry{Name: "names", Shape: []int{3}, Data: []string{"a", "b", "c"}}); err != nil {
		t.Fatal(err)
	}

	features := []string{"data.source=features", "model.arch=identity",
		"data.train=" + p("eval.npz"), "data.val=" + p("eval.npz"), "data.test=" + p("eval.npz")}
	cases := []struct {
		name string
		sets []string
		want []string
		err  string
	}{
		{"builtin", []string{"data.class_names=" + ten}, []string{"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9"}, ""},
		{"builtin, K differs", []string{"data.class_names=" + three}, nil, "data.class_names: " + three + ": 3 lines for K=10 classes"},
		{"features", append(features, "data.class_names="+three), []string{"cat", "dog", "sea lion"}, ""},
		{"features, K differs", append(features, "data.class_names="+ten), nil, ten + ":4: more lines than the K=3 classes"},
		{"features without names", features, []string{"class 0", "class 1", "class 2"}, ""},
		{"features, names in the archive", append(features, "data.train="+p("train.npz")), []string{"a", "b", "c"}, ""},
		{"features, a names file overrides", append(features, "data.train="+p("train.npz"), "data.class_names="+three), []string{"cat", "dog", "sea lion"}, ""},
		{"missing file", []string{"data.class_names=" + p("nope.txt")}, nil, "nope.txt"},
	}
	for _, c := range cases {
		cfg, err := Load("", c.sets)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		sp, _, err := LoadData(cfg)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err = %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(sp.ClassNames, c.want) {
			t.Errorf("%s: names %q, %v; want %q", c.name, sp.ClassNames, err, c.want)
		}
	}
}

// A file that cannot be read is named with the config key that pointed
// at it (issue 26: "open …/nope.npz: no such file or directory" said
// neither which key nor that it came from the config).
func TestLoadErrorsNameTheKey(t *testing.T) {
	dir := t.TempDir()
	p := func(s string) string { return filepath.Join(dir, s) }
	x := npy.Entry{Name: "x", Shape: []int{3, 2}, Data: []float32{1, 2, 3, 4, 5, 6}}
	y := npy.Entry{Name: "y", Shape: []int{3}, Data: []int64{0, 1, 2}}
	if err := npy.WriteNPZ(p("ok.npz"), x, y); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p("junk.npz"), []byte("not a zip"), 0o644); err != nil {
		t.Fatal(err)
	}
	features := func(train, val, test string) []string {
		return []string{"data.source=features", "model.arch=identity", "data.train=" + train, "data.val=" + val, "data.test=" + test}
	}
	for _, c := range []struct {
		name string
		sets []string
		want string
	}{
		{"missing train", features(p("nope.npz"), p("ok.npz"), p("ok.npz")), "data.train: open " + p("nope.npz") + ": no such file or directory"},
		{"missing val", features(p("ok.npz"), p("nope.npz"), p("ok.npz")), "data.val: open " + p("nope.npz") + ": no such file or directory"},
		{"missing test", features(p("ok.npz"), p("ok.npz"), p("gone.npz")), "data.test: open " + p("gone.npz")},
		{"not an npz", features(p("ok.npz"), p("junk.npz"), p("ok.npz")), "data.val: " + p("junk.npz")},
	} {
		cfg, err := Load("", c.sets)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		_, _, err = LoadData(cfg)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to start %q", c.name, err, c.want)
		}
	}
}

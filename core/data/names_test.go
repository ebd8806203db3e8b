package data

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"selmix/core/npy"
)

// numpyFeatures are testdata/features (numpy.savez and savez_compressed).
func numpyFeatures() FeatureFiles {
	p := func(name string) string { return filepath.Join("testdata", "features", name) }
	return FeatureFiles{Train: p("train.npz"), Val: p("val.npz"), Test: p("test.npz")}
}

// Archives written by NumPy: a compressed, Fortran-ordered train split
// with uint64 labels and class names, stored val and test splits.
func TestLoadFeaturesNumPy(t *testing.T) {
	sp, _, err := LoadFeatures(numpyFeatures())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sp.ClassNames, []string{"cat", "dog", "sea lion"}) {
		t.Errorf("names = %q", sp.ClassNames)
	}
	if !slices.Equal(sp.Labeled.Y, []int{0, 1, 2, 0, 1, 0}) || !slices.Equal(sp.Val.Y, []int{2, 1, 0}) || !slices.Equal(sp.Test.Y, []int{1, 2, 0}) {
		t.Errorf("labels %v %v %v", sp.Labeled.Y, sp.Val.Y, sp.Test.Y)
	}
	for _, c := range []struct {
		name string
		s    Set
		off  float32
	}{{"train", sp.Labeled, 0}, {"val", sp.Val, 100}, {"test", sp.Test, 200}} {
		for i := range c.s.N {
			for j := range 4 {
				// numpy computed i + j/10 + off in float64, then cast.
				want := float32(float64(i) + float64(j)/10 + float64(c.off))
				if got := c.s.Row(i)[j]; got != want {
					t.Fatalf("%s x[%d][%d] = %v, want %v", c.name, i, j, got, want)
				}
			}
		}
	}
	ff := numpyFeatures()
	ff.Head = filepath.Join("testdata", "features", "head.npz")
	_, h, err := LoadFeatures(ff)
	if err != nil || !slices.Equal(h.W, []float64{0, -1, -2, 1, 0, -1, 2, 1, 0, 3, 2, 1}) || !slices.Equal(h.B, []float64{0.25, -1, 2}) {
		t.Errorf("head %+v, %v", h, err)
	}
	ff.Train = filepath.Join("testdata", "features", "train_bytes_names.npz")
	if sp, _, err = LoadFeatures(ff); err != nil || !slices.Equal(sp.ClassNames, []string{"a", "b", "c"}) {
		t.Errorf("byte-string names: %q, %v", sp.ClassNames, err)
	}
}

// A flipped byte in a stored member used to load as a wrong number.
func TestLoadFeaturesCorrupt(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "features", "val.npz"))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	off, err := zr.File[0].DataOffset() // x.npy
	if err != nil || zr.File[0].Name != "x.npy" {
		t.Fatal(zr.File[0].Name, err)
	}
	b[off+int64(zr.File[0].UncompressedSize64)-3] ^= 1
	ff := numpyFeatures()
	ff.Val = filepath.Join(t.TempDir(), "val.npz")
	if err := os.WriteFile(ff.Val, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = LoadFeatures(ff)
	if want := ff.Val + `: member "x.npy": CRC-32 mismatch (file is corrupted)`; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
}

func TestArchiveNamesErrors(t *testing.T) {
	cases := []struct {
		name  string
		names any
		want  string
	}{
		{"count", []string{"a", "b"}, `member "names.npy": 2 class names for K=3 classes`},
		{"blank", []string{"a", " ", "c"}, `member "names.npy": class name 1 is blank`},
		{"control", []string{"a", "b\x1b[2J", "c"}, `member "names.npy": class name 1 holds a control character`},
		{"numbers", []int64{1, 2, 3}, `member "names.npy": dtype <i8, want strings`},
		{"2-D", rawNPY("<U1", false, "(3, 1)", []byte("a\x00\x00\x00b\x00\x00\x00c\x00\x00\x00")), `member "names.npy": class names have shape (3, 1), want (K,)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, ff := featureFixture(t)
			p := filepath.Join(dir, "train.npz")
			if raw, ok := c.names.([]byte); ok { // npyio writes no 2-D strings
				writeRawNPZ(t, p, map[string][]byte{
					"x":     rawNPY("<f4", false, "(1, 4)", make([]byte, 16)),
					"y":     rawNPY("<i8", false, "(1,)", make([]byte, 8)),
					"names": raw,
				})
			} else {
				writeNPZ(t, p, map[string]any{"x": feat[float32](6, 4, 0), "y": []int64{0, 1, 2, 0, 1, 0}, "names": c.names})
			}
			_, _, err := LoadFeatures(ff)
			if err == nil || !strings.HasPrefix(err.Error(), p+": ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %s: …%s", err, p, c.want)
			}
		})
	}
}

func TestReadClassNames(t *testing.T) {
	cases := []struct {
		name, text string
		want       []string
		err        string
	}{
		{"plain", "a\nb\nc", []string{"a", "b", "c"}, ""},
		{"final newline, CRLF, spaces", " T-shirt/top \r\nsea lion\r\nc\n", []string{"T-shirt/top", "sea lion", "c"}, ""},
		{"duplicates allowed", "crane\ncrane\nc\n", []string{"crane", "crane", "c"}, ""},
		{"blank line", "a\n\nc\n", nil, "names.txt:2: class name is blank"},
		{"control", "a\nb\tc\nc\n", nil, "names.txt:2: class name holds a control character"},
		{"too many", "a\nb\nc\nd\n", nil, "names.txt:4: more lines than the K=3 classes"},
		{"too few", "a\nb\n", nil, "names.txt: 2 lines for K=3 classes"},
		{"two final newlines", "a\nb\nc\n\n", nil, "names.txt:4: more lines"},
		{"empty", "", nil, "names.txt: no class names"},
		{"bad UTF-8", "a\n\xff\nc", nil, "names.txt:2: class name is not valid UTF-8"},
	}
	for _, c := range cases {
		p := filepath.Join(t.TempDir(), "names.txt")
		if err := os.WriteFile(p, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadClassNames(p, 3)
		if c.err == "" {
			if err != nil || !slices.Equal(got, c.want) {
				t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), filepath.Dir(p)+"/") || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: err = %v, want …%s", c.name, err, c.err)
		}
	}
	if _, err := ReadClassNames(filepath.Join(t.TempDir(), "nope.txt"), 3); !os.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
}

// Loading features costs about their float32 size once: no float64
// intermediate, no per-element boxing.
func TestLoadFeaturesMemory(t *testing.T) {
	const n, d = 20000, 100 // 8 MB of float32
	dir := t.TempDir()
	x := make([]float32, n*d)
	for i := range x {
		x[i] = float32(i%1000) / 7
	}
	y := make([]int64, n)
	for i := range y {
		y[i] = int64(i % 3)
	}
	p := func(s string) string { return filepath.Join(dir, s) }
	if err := npy.WriteNPZ(p("train.npz"), npy.Entry{Name: "x", Shape: []int{n, d}, Data: x}, npy.Entry{Name: "y", Shape: []int{n}, Data: y}); err != nil {
		t.Fatal(err)
	}
	small := []npy.Entry{{Name: "x", Shape: []int{3, d}, Data: make([]float32, 3*d)}, {Name: "y", Shape: []int{3}, Data: []int64{0, 1, 2}}}
	for _, s := range []string{"val.npz", "test.npz"} {
		if err := npy.WriteNPZ(p(s), small...); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	sp, _, err := LoadFeatures(FeatureFiles{Train: p("train.npz"), Val: p("val.npz"), Test: p("test.npz")})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sp.Labeled.X, x) {
		t.Fatal("features differ from what was written")
	}
	need := uint64(4*n*d + 8*n) // X and Y
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > need+need/10+1<<20 {
		t.Errorf("loading %d bytes of features and labels allocated %d", need, alloc)
	}
}

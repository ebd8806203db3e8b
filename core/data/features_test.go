package data

import (
	"archive/zip"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sbinet/npyio/npy"
	"github.com/sbinet/npyio/npz"
)

// fixed turns nested slices ([][]T, [][][]T) into nested arrays ([N][d]T…),
// the form npyio writes as a multi-dimensional array.
func fixed(v any) any {
	var conv func(rv reflect.Value) reflect.Value
	conv = func(rv reflect.Value) reflect.Value {
		if rv.Kind() != reflect.Slice || rv.Len() == 0 {
			return rv
		}
		first := conv(rv.Index(0))
		out := reflect.New(reflect.ArrayOf(rv.Len(), first.Type())).Elem()
		for i := range rv.Len() {
			out.Index(i).Set(conv(rv.Index(i)))
		}
		return out
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice && rv.Len() > 0 && rv.Index(0).Kind() == reflect.Slice {
		return conv(rv).Interface()
	}
	return v
}

// writeFile creates path and fills it with write.
func writeFile(t testing.TB, path string, write func(io.Writer) error) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := write(f); err != nil {
		t.Fatal(err)
	}
}

// writeNPZ writes arrays with npyio under the names NumPy uses ("x.npy").
func writeNPZ(t testing.TB, path string, arrays map[string]any) {
	t.Helper()
	writeFile(t, path, func(f io.Writer) error {
		w := npz.NewWriter(f)
		keys := slices.Sorted(maps.Keys(arrays))
		for _, k := range keys {
			if err := w.Write(k+".npy", fixed(arrays[k])); err != nil {
				return err
			}
		}
		return w.Close()
	})
}

func writeNPY(t testing.TB, path string, v any) {
	t.Helper()
	writeFile(t, path, func(f io.Writer) error { return npy.Write(f, fixed(v)) })
}

// rawNPY builds a version-1 .npy by hand, for headers npyio will not write
// (object dtype, Fortran order, big endian, lies about the shape).
func rawNPY(descr string, fortran bool, shape string, data []byte) []byte {
	order := "False"
	if fortran {
		order = "True"
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': %s, 'shape': %s, }", descr, order, shape)
	for (10+len(dict)+1)%64 != 0 {
		dict += " "
	}
	dict += "\n"
	b := append([]byte("\x93NUMPY\x01\x00"), 0, 0)
	binary.LittleEndian.PutUint16(b[8:], uint16(len(dict)))
	return append(append(b, dict...), data...)
}

func writeRawNPZ(t testing.TB, path string, entries map[string][]byte) {
	t.Helper()
	writeFile(t, path, func(f io.Writer) error {
		zw := zip.NewWriter(f)
		for name, b := range entries {
			w, err := zw.Create(name + ".npy")
			if err != nil {
				return err
			}
			w.Write(b)
		}
		return zw.Close()
	})
}

// feat returns an n×d feature matrix with entry (i,j) = i + j/10 + off.
func feat[T float32 | float64](n, d int, off T) [][]T {
	x := make([][]T, n)
	for i := range x {
		x[i] = make([]T, d)
		for j := range x[i] {
			x[i][j] = T(i) + T(j)/10 + off
		}
	}
	return x
}

// featureFixture writes a valid K=3, d=4 feature export into dir: train as
// an .npz (float32, int64 labels), val as an .npz (float64, int32), test as
// an .npy pair (float64, uint8), unlabeled as an .npz without labels, and a
// head W (4×3 float64), b (3 float32).
func featureFixture(t *testing.T) (string, FeatureFiles) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	writeNPZ(t, p("train.npz"), map[string]any{"x": feat[float32](6, 4, 0), "y": []int64{0, 1, 2, 0, 1, 0}})
	writeNPZ(t, p("val.npz"), map[string]any{"x": feat[float64](3, 4, 100), "y": []int32{2, 1, 0}})
	writeNPY(t, p("test_x.npy"), feat[float64](3, 4, 200))
	writeNPY(t, p("test_y.npy"), []uint8{1, 2, 0})
	writeNPZ(t, p("unl.npz"), map[string]any{"x": feat[float32](5, 4, 300)})
	W := make([][]float64, 4)
	for i := range W {
		W[i] = []float64{float64(i), -float64(i), 0.5}
	}
	writeNPZ(t, p("head.npz"), map[string]any{"W": W, "b": []float32{0.25, -1, 2}})
	return dir, FeatureFiles{
		Train: p("train.npz"), Val: p("val.npz"), Test: p("test_x.npy"), TestY: p("test_y.npy"),
		Unlabeled: p("unl.npz"), Head: p("head.npz"),
	}
}

func TestLoadFeatures(t *testing.T) {
	_, ff := featureFixture(t)
	sp, h, err := LoadFeatures(ff)
	if err != nil {
		t.Fatal(err)
	}
	if sp.K != 3 || !slices.Equal(sp.ClassNames, []string{"class 0", "class 1", "class 2"}) {
		t.Errorf("K=%d names=%v, want 3 classes", sp.K, sp.ClassNames)
	}
	if !slices.Equal(sp.TrainCounts, []int{3, 2, 1}) {
		t.Errorf("TrainCounts = %v, want [3 2 1]", sp.TrainCounts)
	}
	checks := []struct {
		name string
		s    Set
		n    int
		off  float32
		y    []int
	}{
		{"train", sp.Labeled, 6, 0, []int{0, 1, 2, 0, 1, 0}},
		{"val", sp.Val, 3, 100, []int{2, 1, 0}},
		{"test", sp.Test, 3, 200, []int{1, 2, 0}},
		{"unlabeled", sp.Unlabeled, 5, 300, []int{-1, -1, -1, -1, -1}},
	}
	for _, c := range checks {
		if c.s.N != c.n || c.s.Dim != 4 || !slices.Equal(c.s.Y, c.y) {
			t.Errorf("%s: N=%d Dim=%d Y=%v, want N=%d Dim=4 Y=%v", c.name, c.s.N, c.s.Dim, c.s.Y, c.n, c.y)
			continue
		}
		if got, want := c.s.Row(1)[3], 1+float32(3)/10+c.off; got != want {
			t.Errorf("%s: x[1][3] = %v, want %v", c.name, got, want)
		}
	}
	if h == nil || h.D != 4 || h.K != 3 {
		t.Fatalf("head = %+v, want D=4 K=3", h)
	}
	// W row-major d×K: W[2][1] = −2.
	if h.W[2*3+1] != -2 || h.W[3*3+2] != 0.5 || !slices.Equal(h.B, []float64{0.25, -1, 2}) {
		t.Errorf("head W=%v b=%v", h.W, h.B)
	}
}

func TestLoadFeaturesNPYPairsAndLayouts(t *testing.T) {
	dir, ff := featureFixture(t)
	p := func(name string) string { return filepath.Join(dir, name) }
	// Train as a Fortran-ordered big-endian float32 .npy pair with int16
	// labels; x = [[1,2,3,4],[5,6,7,8]] stored column by column.
	var data []byte
	for _, v := range []float32{1, 5, 2, 6, 3, 7, 4, 8} {
		data = binary.BigEndian.AppendUint32(data, math.Float32bits(v))
	}
	os.WriteFile(p("tr_x.npy"), rawNPY(">f4", true, "(2, 4)", data), 0o644)
	writeNPY(t, p("tr_y.npy"), []int16{0, 1})
	ff.Val, ff.Test, ff.TestY, ff.Head = p("v2.npz"), p("t2.npz"), "", "" // K = 2 here
	writeNPZ(t, p("v2.npz"), map[string]any{"x": feat[float64](2, 4, 100), "y": []int32{1, 0}})
	writeNPZ(t, p("t2.npz"), map[string]any{"x": feat[float64](2, 4, 200), "y": []int32{0, 1}})
	ff.Train, ff.TrainY = p("tr_x.npy"), p("tr_y.npy")
	// Unlabeled as an .npy without labels, and an .npz with labels.
	writeNPY(t, p("u_x.npy"), feat[float32](2, 4, 0))
	ff.Unlabeled = p("u_x.npy")
	sp, _, err := LoadFeatures(ff)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sp.Labeled.X, []float32{1, 2, 3, 4, 5, 6, 7, 8}) || !slices.Equal(sp.Labeled.Y, []int{0, 1}) {
		t.Errorf("train X=%v Y=%v", sp.Labeled.X, sp.Labeled.Y)
	}
	if !slices.Equal(sp.Unlabeled.Y, []int{-1, -1}) {
		t.Errorf("unlabeled Y = %v, want unknown", sp.Unlabeled.Y)
	}
	writeNPZ(t, p("u.npz"), map[string]any{"x": feat[float32](2, 4, 0), "y": []int64{1, -1}})
	ff.Unlabeled = p("u.npz")
	if sp, _, err = LoadFeatures(ff); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sp.Unlabeled.Y, []int{1, -1}) {
		t.Errorf("unlabeled Y = %v, want [1 -1]", sp.Unlabeled.Y)
	}
	// Without a head and without unlabeled data.
	ff.Head, ff.Unlabeled = "", ""
	sp, h, err := LoadFeatures(ff)
	if err != nil || h != nil || sp.Unlabeled.N != 0 || sp.Unlabeled.Dim != 4 {
		t.Errorf("no head/unlabeled: err=%v head=%v unlabeled N=%d Dim=%d", err, h, sp.Unlabeled.N, sp.Unlabeled.Dim)
	}
}

func TestLoadFeaturesErrors(t *testing.T) {
	f32 := func(v float32) []byte { return binary.LittleEndian.AppendUint32(nil, math.Float32bits(v)) }
	tests := []struct {
		name  string
		setup func(t *testing.T, p func(string) string, ff *FeatureFiles)
		want  []string
	}{
		{"NaN feature", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			x := feat[float32](6, 4, 0)
			x[3][2] = float32(math.NaN())
			writeNPZ(t, p("train.npz"), map[string]any{"x": x, "y": []int64{0, 1, 2, 0, 1, 0}})
		}, []string{"train.npz", "NaN at row 3, column 2"}},
		{"Inf feature", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			x := feat[float64](3, 4, 0)
			x[1][0] = math.Inf(-1)
			writeNPZ(t, p("val.npz"), map[string]any{"x": x, "y": []int32{2, 1, 0}})
		}, []string{"val.npz", "Inf at row 1, column 0"}},
		{"float64 overflowing float32", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			x := feat[float64](3, 4, 0)
			x[0][1] = 1e300
			writeNPY(t, p("test_x.npy"), x)
		}, []string{"test_x.npy", "1e+300 (overflows float32) at row 0, column 1"}},
		{"negative label", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			writeNPZ(t, p("train.npz"), map[string]any{"x": feat[float32](6, 4, 0), "y": []int64{0, -2, 2, 0, 1, 0}})
		}, []string{"train.npz", "negative label -2 at index 1"}},
		{"test label out of range", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			writeNPY(t, p("test_y.npy"), []uint8{1, 3, 0})
		}, []string{"test_x.npy", "label 3 at index 1 outside [0,3)"}},
		{"unlabeled label out of range", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			writeNPZ(t, p("unl.npz"), map[string]any{"x": feat[float32](2, 4, 0), "y": []int64{0, 7}})
		}, []string{"unl.npz", "label 7 at index 1 outside [-1,3)"}},
		{"huge label", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			writeNPZ(t, p("train.npz"), map[string]any{"x": feat[float32](6, 4, 0), "y": []uint64{0, 1, 2, 0, 1, math.MaxUint64}})
		}, []string{"train.npz", `member "y.npy": label 18446744073709551615 at index 5 exceeds the limit`}},
		{"x/y length mismatch", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			writeNPY(t, p("test_y.npy"), []uint8{1, 2})
		}, []string{"test_y.npy: 2 labels but", "test_x.npy has 3 feature rows"}},
		{"d mismatch", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			writeNPZ(t, p("val.npz"), map[string]any{"x": feat[float64](3, 5, 0), "y": []int32{2, 1, 0}})
		}, []string{"val.npz: features have d=5 but", "train.npz has d=4"}},
		{"class absent from val", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			writeNPZ(t, p("val.npz"), map[string]any{"x": feat[float64](3, 4, 0), "y": []int32{0, 1, 0}})
		}, []string{"val.npz", "class 2 has no validation samples"}},
		{"class absent from train", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			writeNPZ(t, p("train.npz"), map[string]any{"x": feat[float32](6, 4, 0), "y": []int64{0, 1, 0, 0, 1, 0}})
		}, []string{"train.npz", "class 2 has no labeled training samples"}},
		{"class absent from test", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			writeNPY(t, p("test_y.npy"), []uint8{1, 1, 0})
		}, []string{"test_x.npy", "class 2 has no test samples"}},
		{"K < 2", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			writeNPZ(t, p("train.npz"), map[string]any{"x": feat[float32](2, 4, 0), "y": []int64{0, 0}})
			writeNPZ(t, p("val.npz"), map[string]any{"x": feat[float32](1, 4, 0), "y": []int64{0}})
			ff.Head = ""
		}, []string{"train.npz", "K=1"}},
		{"head W transposed", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			writeNPZ(t, p("head.npz"), map[string]any{"W": feat[float64](3, 4, 0), "b": []float64{0, 0, 0}})
		}, []string{"head.npz", "head W has shape (3, 4), want (4, 3)", "PyTorch"}},
		{"head b shape", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			writeNPZ(t, p("head.npz"), map[string]any{"W": feat[float64](4, 3, 0), "b": []float64{0, 0}})
		}, []string{"head.npz", "head b has shape (2,), want (3,)"}},
		{"head NaN", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			writeNPZ(t, p("head.npz"), map[string]any{"W": feat[float64](4, 3, 0), "b": []float64{0, math.NaN(), 0}})
		}, []string{"head.npz", "head b: NaN at flat index 1"}},
		{"head missing b", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			writeNPZ(t, p("head.npz"), map[string]any{"W": feat[float64](4, 3, 0), "bias": []float64{0, 0, 0}})
		}, []string{"head.npz", `missing array "b" (the archive holds W, bias)`}},
		{"complex features", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			writeNPZ(t, p("train.npz"), map[string]any{"x": [][]complex64{{1, 2}, {3, 4}}, "y": []int64{0, 1}})
		}, []string{"train.npz", `member "x.npy"`, "complex"}},
		{"string labels", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			writeNPZ(t, p("train.npz"), map[string]any{"x": feat[float32](2, 4, 0), "y": []string{"cat", "dog"}})
		}, []string{"train.npz", `member "y.npy"`, "strings"}},
		{"float labels", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			writeNPY(t, p("test_y.npy"), []float32{1, 2})
		}, []string{"test_y.npy", "dtype <f4, want an integer dtype"}},
		{"integer features", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			writeNPY(t, p("test_x.npy"), [][]int32{{1, 2, 3, 4}, {5, 6, 7, 8}})
		}, []string{"test_x.npy", "want float32 or float64"}},
		{"missing key", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			writeNPZ(t, p("train.npz"), map[string]any{"x": feat[float32](6, 4, 0), "labels": []int64{0, 1, 2, 0, 1, 0}})
		}, []string{"train.npz", `missing array "y" (the archive holds labels, x)`}},
		{"ragged (object) array", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			writeRawNPZ(t, p("train.npz"), map[string][]byte{
				"x": rawNPY("|O", false, "(2,)", make([]byte, 16)),
				"y": rawNPY("<i8", false, "(2,)", make([]byte, 16)),
			})
		}, []string{"train.npz", `member "x.npy"`, `dtype "|O"`, "ragged"}},
		{"3-D features", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			writeNPZ(t, p("train.npz"), map[string]any{"x": [][][]float32{{{1, 2}}, {{3, 4}}}, "y": []int64{0, 1}})
		}, []string{"train.npz", "shape (2, 1, 2), want 2-D (N, d)"}},
		{"1-D features", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			writeNPY(t, p("test_x.npy"), []float32{1, 2})
		}, []string{"test_x.npy", "shape (2,), want 2-D"}},
		{"2-D labels", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			writeNPY(t, p("test_y.npy"), [][]int64{{1, 2}, {0, 1}})
		}, []string{"test_y.npy", "labels y have shape (2, 2), want (N,)"}},
		{"truncated npy", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			os.WriteFile(p("test_x.npy"), rawNPY("<f4", false, "(2, 4)", slices.Concat(f32(1), f32(2), f32(3))), 0o644)
		}, []string{"test_x.npy", "truncated data: shape (2, 4) of <f4 needs 32 bytes, file has 12"}},
		{"data longer than shape", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			os.WriteFile(p("test_x.npy"), rawNPY("<f4", false, "(1, 1)", slices.Concat(f32(1), f32(2))), 0o644)
		}, []string{"test_x.npy", "4 bytes after the data"}},
		{"not npy", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			os.WriteFile(p("test_x.npy"), []byte("hello, world"), 0o644)
		}, []string{"test_x.npy", "bad magic"}},
		{"malformed header", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			b := rawNPY("<f4", false, "(1, 1)", f32(1))
			copy(b[10:], "{'shape': (1, 1), ")
			os.WriteFile(p("test_x.npy"), b, 0o644)
		}, []string{"test_x.npy", "header"}},
		{"not npz", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			os.WriteFile(p("val.npz"), []byte("PK garbage"), 0o644)
		}, []string{"val.npz", "not an .npz archive"}},
		{"missing file", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			ff.Val = p("nope.npz")
		}, []string{"nope.npz", "no such file"}},
		{"npy without labels", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			ff.TestY = ""
		}, []string{"test_x.npy", "needs its labels .npy"}},
		{"npz with separate labels", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			ff.ValY = p("test_y.npy")
		}, []string{"val.npz", "no separate labels file"}},
		{"no test", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			ff.Test, ff.TestY = "", ""
		}, []string{"no test features"}},
		{"empty train", func(t *testing.T, p func(string) string, ff *FeatureFiles) {
			writeRawNPZ(t, p("train.npz"), map[string][]byte{
				"x": rawNPY("<f4", false, "(0, 4)", nil),
				"y": rawNPY("<i8", false, "(0,)", nil),
			})
		}, []string{"train.npz: no training samples"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, ff := featureFixture(t)
			tc.setup(t, func(name string) string { return filepath.Join(dir, name) }, &ff)
			sp, h, err := LoadFeatures(ff)
			if err == nil {
				t.Fatalf("no error; got split K=%d head=%v", sp.K, h)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v\nwant it to mention %q", err, w)
				}
			}
		})
	}
}

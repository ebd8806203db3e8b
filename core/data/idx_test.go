package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// idxBytes encodes an unsigned-byte IDX file with the given dimensions.
func idxBytes(dims []int, data []byte) []byte {
	b := []byte{0, 0, idxUbyte, byte(len(dims))}
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, uint32(d))
	}
	return append(b, data...)
}

func gzipBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestReadIDXImagesRoundTrip(t *testing.T) {
	// 3 images of 2×3 pixels; pixel j of image i is 40·i + j, and the last
	// pixel is 255 so the top of the scale is exercised.
	const n, rows, cols = 3, 2, 3
	data := make([]byte, n*rows*cols)
	for i := range data {
		data[i] = byte(40*(i/(rows*cols)) + i%(rows*cols))
	}
	data[len(data)-1] = 255
	plain := idxBytes([]int{n, rows, cols}, data)
	for _, tc := range []struct {
		name string
		in   []byte
	}{{"plain", plain}, {"gzip", gzipBytes(t, plain)}} {
		t.Run(tc.name, func(t *testing.T) {
			x, gn, gr, gc, err := ReadIDXImages(bytes.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if gn != n || gr != rows || gc != cols {
				t.Fatalf("shape = %d×%d×%d, want %d×%d×%d", gn, gr, gc, n, rows, cols)
			}
			if len(x) != len(data) {
				t.Fatalf("len(x) = %d, want %d", len(x), len(data))
			}
			for i, b := range data {
				if want := float32(b) / 255; x[i] != want {
					t.Errorf("x[%d] = %v, want %v", i, x[i], want)
				}
			}
			if x[len(x)-1] != 1 || x[0] != 0 {
				t.Errorf("scale ends: x[0]=%v x[last]=%v, want 0 and 1", x[0], x[len(x)-1])
			}
		})
	}
}

func TestReadIDXLabelsRoundTrip(t *testing.T) {
	want := []int{9, 0, 0, 3, 7, 255}
	data := make([]byte, len(want))
	for i, v := range want {
		data[i] = byte(v)
	}
	plain := idxBytes([]int{len(want)}, data)
	for _, in := range [][]byte{plain, gzipBytes(t, plain)} {
		got, err := ReadIDXLabels(bytes.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("got %d labels, want %d", len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("label %d = %d, want %d", i, got[i], want[i])
			}
		}
	}
}

func TestReadIDXErrors(t *testing.T) {
	good := idxBytes([]int{2, 2, 2}, []byte{1, 2, 3, 4, 5, 6, 7, 8})
	badGzip := gzipBytes(t, good)
	badGzip[len(badGzip)-6] ^= 0xff // CRC-32 in the gzip trailer
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "no header"},
		{"bad magic", append([]byte{1, 2}, good[2:]...), "bad magic"},
		{"float type", append([]byte{0, 0, 0x0d, 3}, good[4:]...), "element type 0x0d"},
		{"label file given as images", idxBytes([]int{2}, []byte{1, 2}), "1 dimensions, want 3"},
		{"truncated header", good[:9], "truncated header"},
		{"truncated data", good[:len(good)-3], "header promises 8 bytes, found 5"},
		{"truncated gzip data", gzipBytes(t, good[:len(good)-1]), "found 7"},
		{"trailing bytes", append(append([]byte{}, good...), 0), "trailing bytes"},
		{"zero-size images", idxBytes([]int{2, 0, 2}, nil), "empty image size"},
		{"huge header", idxBytes([]int{1 << 30, 1 << 30, 1 << 30}, nil), "too large"},
		{"huge count, no data", idxBytes([]int{1 << 20, 28, 28}, []byte{1}), "found 1"},
		{"gzip checksum", badGzip, "checksum"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, _, _, err := ReadIDXImages(bytes.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
	if _, err := ReadIDXLabels(bytes.NewReader(good)); err == nil || !strings.Contains(err.Error(), "3 dimensions, want 1") {
		t.Errorf("labels from an image file: err = %v", err)
	}
	if _, err := ReadIDXLabels(bytes.NewReader(idxBytes([]int{4}, []byte{1}))); err == nil || !strings.Contains(err.Error(), "promises 4 bytes, found 1") {
		t.Errorf("truncated labels: err = %v", err)
	}
}

// writeFashionDir writes a synthetic Fashion-MNIST directory: nTrain and
// nTest 4×4 images whose labels cycle through the 10 classes. Train files
// are gzipped, test files plain, so both naming schemes are exercised.
func writeFashionDir(t *testing.T, nTrain, nTest, nTrainLabels int) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	img := func(n int) []byte {
		d := make([]byte, n*16)
		for i := range d {
			d[i] = byte(i * 7)
		}
		return idxBytes([]int{n, 4, 4}, d)
	}
	lbl := func(n int) []byte {
		d := make([]byte, n)
		for i := range d {
			d[i] = byte(i % 10)
		}
		return idxBytes([]int{n}, d)
	}
	write("train-images-idx3-ubyte.gz", gzipBytes(t, img(nTrain)))
	write("train-labels-idx1-ubyte.gz", gzipBytes(t, lbl(nTrainLabels)))
	write("t10k-images-idx3-ubyte", img(nTest))
	write("t10k-labels-idx1-ubyte", lbl(nTest))
	return dir
}

func TestLoadFashionMNISTSynthetic(t *testing.T) {
	dir := writeFashionDir(t, 50, 20, 50)
	raw, err := LoadFashionMNIST(dir)
	if err != nil {
		t.Fatal(err)
	}
	if raw.Train.N != 50 || raw.Test.N != 20 || raw.Train.Dim != 16 || raw.Test.Dim != 16 || raw.K != 10 {
		t.Fatalf("train %d×%d test %d×%d K=%d, want 50×16, 20×16, K=10", raw.Train.N, raw.Train.Dim, raw.Test.N, raw.Test.Dim, raw.K)
	}
	for k, c := range raw.Train.Counts(10) {
		if c != 5 {
			t.Errorf("train class %d count = %d, want 5", k, c)
		}
	}
	if got, want := raw.Train.Row(1)[0], float32(16*7%256)/255; got != want {
		t.Errorf("train row 1 pixel 0 = %v, want %v", got, want)
	}
	if raw.ClassNames[6] != "Shirt" {
		t.Errorf("class 6 = %q, want Shirt", raw.ClassNames[6])
	}
}

func TestLoadFashionMNISTErrors(t *testing.T) {
	t.Run("count mismatch", func(t *testing.T) {
		dir := writeFashionDir(t, 50, 20, 49)
		_, err := LoadFashionMNIST(dir)
		if err == nil || !strings.Contains(err.Error(), "train-labels-idx1-ubyte.gz: 49 labels but") ||
			!strings.Contains(err.Error(), "has 50 images") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		dir := writeFashionDir(t, 10, 10, 10)
		os.Remove(filepath.Join(dir, "t10k-labels-idx1-ubyte"))
		_, err := LoadFashionMNIST(dir)
		if err == nil || !strings.Contains(err.Error(), "t10k-labels-idx1-ubyte.gz: not found") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("label out of range", func(t *testing.T) {
		dir := writeFashionDir(t, 10, 10, 10)
		os.WriteFile(filepath.Join(dir, "t10k-labels-idx1-ubyte"), idxBytes([]int{10}, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 10}), 0o644)
		_, err := LoadFashionMNIST(dir)
		if err == nil || !strings.Contains(err.Error(), "t10k-labels-idx1-ubyte: label 10 at index 9 outside [0,10)") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("corrupt images", func(t *testing.T) {
		dir := writeFashionDir(t, 10, 10, 10)
		os.WriteFile(filepath.Join(dir, "train-images-idx3-ubyte.gz"), []byte("not idx"), 0o644)
		_, err := LoadFashionMNIST(dir)
		if err == nil || !strings.Contains(err.Error(), "train-images-idx3-ubyte.gz: idx: bad magic") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestLoadFashionMNISTReal(t *testing.T) {
	if _, err := os.Stat(filepath.Join(DefaultFashionMNISTDir, "train-images-idx3-ubyte.gz")); err != nil {
		t.Skip("Fashion-MNIST not installed:", err)
	}
	raw, err := LoadFashionMNIST("")
	if err != nil {
		t.Fatal(err)
	}
	if raw.Train.N != 60000 || raw.Test.N != 10000 || raw.Train.Dim != 784 || raw.Test.Dim != 784 {
		t.Fatalf("train %d×%d test %d×%d, want 60000×784 and 10000×784", raw.Train.N, raw.Train.Dim, raw.Test.N, raw.Test.Dim)
	}
	for k := range 10 {
		if c := raw.Train.Counts(10)[k]; c != 6000 {
			t.Errorf("train class %d: %d images, want 6000", k, c)
		}
		if c := raw.Test.Counts(10)[k]; c != 1000 {
			t.Errorf("test class %d: %d images, want 1000", k, c)
		}
	}
	// The long-tailed split the default experiment uses must fit.
	sp, err := BuildLT(raw, SplitConfig{N1: 5000, RhoL: 100, ValPerClass: 500, TestPerClass: 0, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if sp.Labeled.N != 12408 || sp.Val.N != 5000 || sp.Test.N != 10000 {
		t.Errorf("labeled %d val %d test %d, want 12408, 5000, 10000", sp.Labeled.N, sp.Val.N, sp.Test.N)
	}
	var buf bytes.Buffer
	if err := SaveSet(&buf, sp.Val); err != nil {
		t.Fatal(err)
	}
	// Images are stored one byte per pixel: header + 5000·784 + 5000 + CRC.
	if want := setHeaderLen + 5000*784 + 5000 + 4; buf.Len() != want {
		t.Errorf("encoded val set is %d bytes, want %d", buf.Len(), want)
	}
}

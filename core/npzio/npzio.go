// Package npzio reads and writes NumPy .npz archives of float64 arrays with
// strict checking, on top of github.com/sbinet/npyio. It exists so that every
// command reports a bad archive the same way: one line naming the file, the
// key, and what was expected.
package npzio

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sbinet/npyio/npy"
	"github.com/sbinet/npyio/npz"
)

// maxElems bounds any single array so a forged header cannot make us
// allocate without limit; 1<<28 float64 is 2 GiB.
const maxElems = 1 << 28

// File is an opened .npz archive.
type File struct {
	name    string
	entries map[string]*zip.File
	keys    []string
	closer  io.Closer
}

// Open opens the archive at path.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	nf, err := newFile(path, f, st.Size())
	if err != nil {
		f.Close()
		return nil, err
	}
	nf.closer = f
	return nf, nil
}

// OpenBytes reads an archive held in memory; name is used in errors.
func OpenBytes(name string, b []byte) (*File, error) {
	return newFile(name, bytes.NewReader(b), int64(len(b)))
}

func newFile(name string, r io.ReaderAt, size int64) (*File, error) {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, fmt.Errorf("%s: not an .npz archive: %v", name, err)
	}
	f := &File{name: name, entries: make(map[string]*zip.File)}
	for _, e := range zr.File {
		k := strings.TrimSuffix(e.Name, ".npy")
		if _, dup := f.entries[k]; dup {
			return nil, fmt.Errorf("%s: key %q appears twice", name, k)
		}
		f.entries[k] = e
		f.keys = append(f.keys, k)
	}
	sort.Strings(f.keys)
	return f, nil
}

// Close releases the underlying file, if any.
func (f *File) Close() error {
	if f.closer == nil {
		return nil
	}
	return f.closer.Close()
}

// Keys lists the array names, sorted, without the ".npy" suffix.
func (f *File) Keys() []string { return append([]string(nil), f.keys...) }

// Has reports whether the archive holds key.
func (f *File) Has(key string) bool { _, ok := f.entries[key]; return ok }

// Float64 reads key as a little-endian float64 array. Each entry of shape
// gives the expected length of that dimension, or -1 for any; the number
// of dimensions must match. It returns the data (C order) and the shape.
func (f *File) Float64(key string, shape ...int) ([]float64, []int, error) {
	e, ok := f.entries[key]
	if !ok {
		return nil, nil, fmt.Errorf("%s: missing key %q (has %s)", f.name, key, f.keyList())
	}
	rc, err := e.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: key %q: %v", f.name, key, err)
	}
	defer rc.Close()
	r, err := npy.NewReader(rc)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: key %q: not a .npy array: %v", f.name, key, err)
	}
	h := r.Header
	if h.Descr.Type != "<f8" {
		return nil, nil, fmt.Errorf("%s: key %q: expected dtype float64 (<f8), got %s", f.name, key, h.Descr.Type)
	}
	got := h.Descr.Shape
	if err := checkShape(got, shape); err != nil {
		return nil, nil, fmt.Errorf("%s: key %q: %v", f.name, key, err)
	}
	n := 1
	for _, d := range got {
		if d < 0 || (d > 0 && n > maxElems/d) {
			return nil, nil, fmt.Errorf("%s: key %q: shape %v too large", f.name, key, got)
		}
		n *= d
	}
	if uint64(n)*8 > e.UncompressedSize64 {
		return nil, nil, fmt.Errorf("%s: key %q: header shape %v needs %d bytes, entry holds %d", f.name, key, got, n*8, e.UncompressedSize64)
	}
	data := make([]float64, n)
	if n > 0 {
		if err := r.Read(&data); err != nil {
			return nil, nil, fmt.Errorf("%s: key %q: %v", f.name, key, err)
		}
	}
	if h.Descr.Fortran && len(got) == 2 {
		data = fortranToC(data, got[0], got[1])
	}
	return data, append([]int(nil), got...), nil
}

func (f *File) keyList() string {
	if len(f.keys) == 0 {
		return "no arrays"
	}
	return strings.Join(f.keys, ", ")
}

func checkShape(got, want []int) error {
	if len(want) == 0 && len(got) == 0 {
		return nil
	}
	if len(got) != len(want) {
		return fmt.Errorf("expected %d-D array of shape %s, got shape %v", len(want), shapeString(want), got)
	}
	for i := range want {
		if want[i] >= 0 && got[i] != want[i] {
			return fmt.Errorf("expected shape %s, got %v", shapeString(want), got)
		}
	}
	return nil
}

func shapeString(s []int) string {
	parts := make([]string, len(s))
	for i, d := range s {
		if d < 0 {
			parts[i] = "*"
		} else {
			parts[i] = fmt.Sprint(d)
		}
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func fortranToC(data []float64, rows, cols int) []float64 {
	out := make([]float64, len(data))
	for c := 0; c < cols; c++ {
		for r := 0; r < rows; r++ {
			out[r*cols+c] = data[c*rows+r]
		}
	}
	return out
}

// Array is one named array to write. Shape nil with one element of Data
// writes a 0-d scalar.
type Array struct {
	Name  string
	Shape []int
	Data  []float64
}

// Write writes arrays to path atomically: a temporary file in the same
// directory, fsynced, then renamed over path, so a crash never leaves a
// half-written archive behind.
func Write(path string, arrays []Array) error {
	return writeAtomic(path, func(w io.Writer) error { return Encode(w, arrays) })
}

// writeAtomic writes what enc produces to a temp file beside path, fsyncs
// it and renames it over path.
func writeAtomic(path string, enc func(io.Writer) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if err := enc(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Encode writes arrays as an .npz archive to w.
func Encode(w io.Writer, arrays []Array) error {
	zw := npz.NewWriter(w)
	for _, a := range arrays {
		v, err := value(a)
		if err != nil {
			return err
		}
		if err := zw.Write(a.Name+".npy", v); err != nil {
			return err
		}
	}
	return zw.Close()
}

func value(a Array) (any, error) {
	if a.Shape == nil {
		if len(a.Data) != 1 {
			return nil, fmt.Errorf("array %q: scalar needs one value, have %d", a.Name, len(a.Data))
		}
		return a.Data[0], nil
	}
	n := 1
	for _, d := range a.Shape {
		n *= d
	}
	if n != len(a.Data) {
		return nil, fmt.Errorf("array %q: shape %v needs %d values, have %d", a.Name, a.Shape, n, len(a.Data))
	}
	switch len(a.Shape) {
	case 1:
		return append([]float64(nil), a.Data...), nil
	case 2:
		return denseOf(a.Shape[0], a.Shape[1], a.Data), nil
	}
	return nil, errors.New("npzio: only 0-, 1- and 2-D arrays are written")
}

// WriteNpy writes one array as a standalone .npy file at path, atomically
// like Write.
func WriteNpy(path string, a Array) error {
	v, err := value(a)
	if err != nil {
		return err
	}
	return writeAtomic(path, func(w io.Writer) error { return npy.Write(w, v) })
}

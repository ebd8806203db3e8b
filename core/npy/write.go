package npy

import (
	"archive/zip"
	"fmt"
	"io"
	"math"

	"selmix/internal/atomicfile"
)

// Encode writes one array as a .npy stream: the header, then the data
// ([]float32, []float64, []uint8, []int64 or []int, written as <i8, or
// []string, written as <U…) in C order, little-endian. An empty shape is a
// 0-d scalar of one element.
func Encode(w io.Writer, shape []int, data any) error {
	var (
		dt  DType
		n   int
		put func(b []byte, i, m int) // encodes elements i … i+m-1 into b
	)
	switch v := data.(type) {
	case []float32:
		dt, n = DType{Kind: Float, Size: 4}, len(v)
		put = func(b []byte, i, m int) {
			for j, x := range v[i : i+m] {
				le.PutUint32(b[4*j:], math.Float32bits(x))
			}
		}
	case []float64:
		dt, n = DType{Kind: Float, Size: 8}, len(v)
		put = func(b []byte, i, m int) {
			for j, x := range v[i : i+m] {
				le.PutUint64(b[8*j:], math.Float64bits(x))
			}
		}
	case []uint8:
		dt, n = DType{Kind: Uint, Size: 1}, len(v)
		put = func(b []byte, i, m int) { copy(b, v[i:i+m]) }
	case []int64:
		dt, n = DType{Kind: Int, Size: 8}, len(v)
		put = func(b []byte, i, m int) {
			for j, x := range v[i : i+m] {
				le.PutUint64(b[8*j:], uint64(x))
			}
		}
	case []int:
		dt, n = DType{Kind: Int, Size: 8}, len(v)
		put = func(b []byte, i, m int) {
			for j, x := range v[i : i+m] {
				le.PutUint64(b[8*j:], uint64(int64(x)))
			}
		}
	case []string:
		rs := make([][]rune, len(v))
		width := 1
		for i, x := range v {
			rs[i] = []rune(x)
			width = max(width, len(rs[i]))
		}
		dt, n = DType{Kind: Unicode, Size: 4 * width}, len(v)
		put = func(b []byte, i, m int) {
			clear(b[:m*dt.Size])
			for j, r := range rs[i : i+m] {
				for k, c := range r {
					le.PutUint32(b[j*dt.Size+4*k:], uint32(c))
				}
			}
		}
	default:
		return fmt.Errorf("npy: cannot encode %T", data)
	}
	want := 1
	for _, d := range shape {
		if d < 0 {
			return fmt.Errorf("npy: negative dimension in shape %s", ShapeString(shape))
		}
		want *= d
	}
	if want != n {
		return fmt.Errorf("npy: shape %s needs %d elements, have %d", ShapeString(shape), want, n)
	}
	hdr, err := encodeHeader(dt, shape)
	if err != nil {
		return err
	}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	per := max(chunk/dt.Size, 1)
	buf := make([]byte, min(n, per)*dt.Size)
	for i := 0; i < n; i += per {
		m := min(n-i, per)
		put(buf, i, m)
		if _, err := w.Write(buf[:m*dt.Size]); err != nil {
			return err
		}
	}
	return nil
}

// NPZWriter writes an .npz archive the way numpy.savez does: one
// uncompressed member "<name>.npy" per array.
type NPZWriter struct {
	zw    *zip.Writer
	names map[string]bool
}

// NewNPZWriter starts an archive on w.
func NewNPZWriter(w io.Writer) *NPZWriter {
	return &NPZWriter{zw: zip.NewWriter(w), names: map[string]bool{}}
}

// Add writes array name; shape and data are as for Encode.
func (z *NPZWriter) Add(name string, shape []int, data any) error {
	if z.names[name] {
		return fmt.Errorf("npy: array %q written twice", name)
	}
	z.names[name] = true
	// No modification time: the same arrays always make the same bytes.
	w, err := z.zw.CreateHeader(&zip.FileHeader{Name: name + ".npy", Method: zip.Store})
	if err == nil {
		err = Encode(w, shape, data)
	}
	if err != nil {
		return fmt.Errorf("array %q: %w", name, err)
	}
	return nil
}

// Close finishes the archive (it does not close the underlying writer).
func (z *NPZWriter) Close() error { return z.zw.Close() }

// Entry is one named array to write.
type Entry struct {
	Name  string
	Shape []int
	Data  any
}

// WriteNPZ writes entries as an .npz archive at path, atomically.
func WriteNPZ(path string, entries ...Entry) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		z := NewNPZWriter(w)
		for _, e := range entries {
			if err := z.Add(e.Name, e.Shape, e.Data); err != nil {
				return err
			}
		}
		return z.Close()
	})
}

// WriteFile writes one array as a .npy file at path, atomically.
func WriteFile(path string, shape []int, data any) error {
	return atomicfile.Write(path, func(w io.Writer) error { return Encode(w, shape, data) })
}

// Package npy reads and writes NumPy .npy arrays and .npz archives, for
// every file selmix exchanges with numpy: imported features and heads,
// `selmix gain`'s statistics and results, exported heads and model
// checkpoints.
//
// Files are untrusted. Before anything is allocated, a header is parsed
// strictly and checked against the number of bytes that actually follow it
// (no truncation, no trailing bytes); an archive member is read to its end
// so its CRC-32 is verified; no panic escapes. Every error names the file,
// and the member of an archive: `train.npz: member "x.npy": CRC-32
// mismatch (file is corrupted)`.
//
// Data is decoded in bulk through a small buffer straight into the
// destination type (a float64 array into []float32, say), so reading an
// array costs its size once. The code is our own rather than
// github.com/sbinet/npyio's: npyio's header parser slices without bounds
// checks (a malformed header panics, a forged one allocates what it
// claims), its decoder reads element by element through reflection and
// ignores io.EOF (a truncated array passes), and its writer cannot write
// the uncompressed, version 1.0, 64-byte aligned members numpy.savez
// writes and selmix checkpoints are made of. npyio still serves as an
// independent writer in the tests.
package npy

import (
	"archive/zip"
	"compress/flate"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"selmix/internal/boundedfile"
)

// Array is one array whose header has been read and checked against the
// data that follows it. Read its data once with one of the Read methods;
// Close it in any case.
type Array struct {
	Header
	where string       // error prefix: the file, and the member of an archive
	src   io.Reader    // positioned at the first data byte
	end   func() error // after the data: checks that the stream ends there
	close func() error
	// corrupted, if not nil, reads the rest of the stream and reports
	// whether it fails its checksum.
	corrupted func() bool
	read      bool
	verified  bool // the whole stream was read and passed its checks
}

// Errorf returns an error prefixed with where the array is: the file, and
// the member of an archive. If the member fails its CRC-32 check, that is
// the error instead: a header or a value that makes no sense is most
// often a corrupted file.
func (a *Array) Errorf(format string, args ...any) error {
	if !a.verified && a.corrupted != nil && a.corrupted() {
		return a.errorf("CRC-32 mismatch (file is corrupted)")
	}
	return a.errorf(format, args...)
}

// errorf is Errorf without the check.
func (a *Array) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %w", a.where, fmt.Errorf(format, args...))
}

// Close releases the file or archive member.
func (a *Array) Close() error {
	if a.close == nil {
		return nil
	}
	c := a.close
	a.close = nil
	return c()
}

// CheckShape returns an error unless the array has len(want) dimensions,
// each of the length want gives (-1: any).
func (a *Array) CheckShape(want ...int) error {
	ok := len(a.Shape) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = want[i] < 0 || a.Shape[i] == want[i]
	}
	if ok {
		return nil
	}
	dims := make([]string, len(want))
	for i, d := range want {
		dims[i] = "*"
		if d >= 0 {
			dims[i] = strconv.Itoa(d)
		}
	}
	w := tuple(dims)
	if len(a.Shape) != len(want) {
		return a.Errorf("expected a %d-D array of shape %s, got %s", len(want), w, ShapeString(a.Shape))
	}
	return a.Errorf("expected shape %s, got %s", w, ShapeString(a.Shape))
}

// Open opens the .npy file at path and reads its header.
func Open(path string) (*Array, error) {
	a, f, err := openWith(path, func(f *os.File, size int64) (*Array, error) { return NewReader(path, f, size) })
	if err != nil {
		return nil, err
	}
	a.close = f.Close
	return a, nil
}

// NewReader reads the header of a .npy stream of size bytes from r; name
// prefixes errors.
func NewReader(name string, r io.Reader, size int64) (a *Array, err error) {
	defer guard(name, &err)
	a, err = readHeader(name, r, size)
	if err != nil {
		return nil, err
	}
	a.end = func() error {
		if n, _ := io.ReadFull(r, make([]byte, 1)); n > 0 {
			return errors.New("the file grew while it was read")
		}
		return nil
	}
	return a, nil
}

// readHeader reads and checks the preamble and header of a stream of size
// bytes; the returned Array's src is positioned at the data.
func readHeader(where string, r io.Reader, size int64) (*Array, error) {
	a := &Array{where: where, src: r}
	b := make([]byte, 12)
	n := int(min(size, 8))
	if _, err := io.ReadFull(r, b[:n]); err != nil {
		return nil, a.corrupt(err)
	}
	pre, err := preamble(b[:n])
	if err != nil {
		return nil, a.errorf("%v", err)
	}
	if size < int64(pre) {
		return nil, a.errorf("truncated .npy header (%d bytes)", size)
	}
	if _, err := io.ReadFull(r, b[8:pre]); err != nil {
		return nil, a.corrupt(err)
	}
	hlen, err := headerLen(b[:pre])
	if err != nil {
		return nil, a.errorf("%v", err)
	}
	if int64(pre+hlen) > size {
		return nil, a.errorf("truncated .npy header (%d header bytes declared, file has %d)", hlen, size-int64(pre))
	}
	hb := make([]byte, hlen)
	if _, err := io.ReadFull(r, hb); err != nil {
		return nil, a.corrupt(err)
	}
	if a.Header, err = parseHeader(hb); err != nil {
		return nil, a.errorf("%v", err)
	}
	data := size - int64(pre+hlen)
	if err := a.checkSize(data); err != nil {
		return nil, a.errorf("%v", err)
	}
	// The data is there (a compressed member: its recorded size, checked
	// as it is read): whether it fits in memory is the last question.
	if err := boundedfile.CheckAlloc(fmt.Sprintf("a %s %s array", ShapeString(a.Shape), a.DType), data); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return a, nil
}

// corrupt explains an error met while reading the stream.
func (a *Array) corrupt(err error) error {
	var fe flate.CorruptInputError
	switch {
	case errors.Is(err, zip.ErrChecksum):
		return a.errorf("CRC-32 mismatch (file is corrupted)")
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return a.errorf("data ends early (file is truncated or corrupted)")
	case errors.Is(err, zip.ErrFormat):
		return a.errorf("more data than its recorded size (file is corrupted)")
	case errors.As(err, &fe):
		return a.errorf("corrupt compressed data (file is corrupted)")
	}
	return a.errorf("%v", err)
}

// guard turns a panic below it into an error naming where it happened, so
// that no panic from the decoding libraries (archive/zip, compress/flate)
// or from a bug here reaches the user.
func guard(where string, err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%s: internal error while decoding (please report): %v", where, p)
	}
}

// openWith opens path and reads it with read, given its size (every header
// is checked against the bytes present); the file is closed unless read
// succeeds.
func openWith[T any](path string, read func(f *os.File, size int64) (T, error)) (T, *os.File, error) {
	var v T
	f, size, err := boundedfile.Open(path, boundedfile.Unbounded)
	if err != nil {
		return v, nil, err
	}
	if v, err = read(f, size); err == nil {
		return v, f, nil
	}
	f.Close()
	return v, nil, err
}

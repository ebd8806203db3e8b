// Package boundedfile is the read side of every file selmix reads: a file
// is opened only if it is a regular file (a FIFO, device, socket or
// directory is refused before anything blocks on it) and read only up to a
// bound that fits what it is, checked before reading. internal/atomicfile is
// the write side.
package boundedfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Errors an *Error wraps, for errors.Is.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("file too large")
)

// Limit is the bound for one kind of file: What names the kind in
// messages ("config file"), Max is its largest size in bytes (< 0: no
// bound; the reader checks its own header against the size instead).
type Limit struct {
	What string
	Max  int64
}

// Unbounded is the limit of files whose readers check every length they
// read against the file's size (npy, npz, arrays.bin): only regular files
// are accepted.
var Unbounded = Limit{What: "file", Max: -1}

// Error is a file refused for its type or size: one line naming the file
// and why.
type Error struct {
	Path  string
	Limit Limit
	Size  int64       // the size found (too large; -1: grew while read)
	Mode  fs.FileMode // the type found (not regular)
	Err   error       // ErrNotRegular or ErrTooLarge
}

func (e *Error) Error() string {
	if errors.Is(e.Err, ErrNotRegular) {
		return fmt.Sprintf("%s is not a regular file (%s)", e.Path, describeMode(e.Mode))
	}
	if e.Size < 0 { // it grew past the bound while being read
		return fmt.Sprintf("%s: more than the %d bytes a %s may hold", e.Path, e.Limit.Max, e.Limit.What)
	}
	return fmt.Sprintf("%s: %d bytes is more than the %d a %s may hold", e.Path, e.Size, e.Limit.Max, e.Limit.What)
}

func (e *Error) Unwrap() error { return e.Err }

// describeMode names a file type the way a user knows it.
func describeMode(m fs.FileMode) string {
	switch {
	case m&fs.ModeDir != 0:
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "type " + m.Type().String()
}

// check refuses fi if it is not a regular file or is larger than l.
func check(path string, fi fs.FileInfo, l Limit) error {
	if !fi.Mode().IsRegular() {
		return &Error{Path: path, Limit: l, Mode: fi.Mode(), Err: ErrNotRegular}
	}
	if l.Max >= 0 && fi.Size() > l.Max {
		return &Error{Path: path, Limit: l, Size: fi.Size(), Err: ErrTooLarge}
	}
	return nil
}

// Open opens path for reading if it is a regular file within l, and
// returns it with its size. The type is checked before opening (opening a
// FIFO would block, opening a device may act on it) and again on the open
// file, so a file swapped in between is refused too.
func Open(path string, l Limit) (*os.File, int64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			pe.Op = "open" // what the caller asked for, as os.Open says it
		}
		return nil, 0, err
	}
	if err := check(path, fi, l); err != nil {
		return nil, 0, err
	}
	// O_NONBLOCK: if a FIFO replaced the file since Stat, opening it
	// returns at once (and the check below refuses it); it changes nothing
	// for a regular file.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, err
	}
	if fi, err = f.Stat(); err == nil {
		err = check(path, fi, l)
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

// ReadFile reads the whole of path if it is a regular file within l. It
// never reads more than l.Max bytes, even from a file that grows while it
// reads.
func ReadFile(path string, l Limit) ([]byte, error) {
	f, size, err := Open(path, l)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return read(f, path, size, l)
}

// read reads r (size bytes when opened) up to l.Max+1 bytes.
func read(r io.Reader, path string, size int64, l Limit) ([]byte, error) {
	if l.Max >= 0 {
		r = io.LimitReader(r, l.Max+1)
	}
	var b bytes.Buffer
	b.Grow(int(size) + 1)
	if _, err := b.ReadFrom(r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if l.Max >= 0 && int64(b.Len()) > l.Max {
		return nil, &Error{Path: path, Limit: l, Size: -1, Err: ErrTooLarge}
	}
	return b.Bytes(), nil
}

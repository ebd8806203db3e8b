// Package atomicfile replaces files so that a reader, or a crash at any
// moment, sees either the old content or the new one, never half of it:
// write a temp file in the same directory, fsync it, rename it over the
// target, fsync the directory. Every file selmix must never leave
// half-written goes through here.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// TempMarker is part of every temp file name: ".<name>.tmp-<random>", so a
// directory's owner can recognise and remove the leftovers of a crash
// (IsTemp).
const TempMarker = ".tmp-"

// IsTemp reports whether a file name is one of our temp files.
func IsTemp(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, TempMarker)
}

// File is what a write needs of the temp file.
type File interface {
	io.Writer
	Sync() error
	Close() error
}

// Options adjusts a write; the zero value is what every caller but tests
// wants.
type Options struct {
	// Wrap, if not nil, wraps the temp file before anything is written to
	// it, so tests can inject write, sync or close failures.
	Wrap func(*os.File) File
	// Perm is the file's mode; 0 means 0644.
	Perm os.FileMode
}

// WriteFile replaces path with b, mode 0644.
func WriteFile(path string, b []byte) error { return Options{}.WriteFile(path, b) }

// Write replaces path with what write writes to w, mode 0644. If write
// fails, path is untouched.
func Write(path string, write func(w io.Writer) error) error {
	return Options{}.Write(path, write)
}

// WriteFile is WriteFile with these options.
func (o Options) WriteFile(path string, b []byte) error {
	return o.Write(path, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// Write is Write with these options. On any error the temp file is
// removed and the error names path.
func (o Options) Write(path string, write func(w io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tf, err := os.CreateTemp(dir, "."+base+TempMarker+"*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := tf.Name()
	var f File = tf
	if o.Wrap != nil {
		f = o.Wrap(tf)
	}
	closed := false
	defer func() {
		if err != nil {
			if !closed {
				f.Close()
			}
			os.Remove(tmp)
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}()
	perm := o.Perm
	if perm == 0 {
		perm = 0o644
	}
	if err := tf.Chmod(perm); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(fullWriter{f}, 1<<16)
	if err := write(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	closed = true
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return SyncDir(dir)
}

// fullWriter turns a short write without an error into io.ErrShortWrite.
type fullWriter struct{ w io.Writer }

func (f fullWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	return n, err
}

// SyncDir fsyncs a directory so a rename, create or remove in it is
// durable. File systems that cannot sync directories (EINVAL, ENOTSUP) are
// tolerated.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) {
		return nil
	}
	return err
}

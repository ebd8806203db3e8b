package atomicfile

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// faulty fails its Write after budget bytes, or its Sync or Close.
type faulty struct {
	File
	budget            int
	syncErr, closeErr error
}

func (f *faulty) Write(p []byte) (int, error) {
	if len(p) <= f.budget {
		f.budget -= len(p)
		return f.File.Write(p)
	}
	n, _ := f.File.Write(p[:f.budget])
	f.budget = 0
	return n, syscall.ENOSPC
}

func (f *faulty) Sync() error {
	if f.syncErr != nil {
		return f.syncErr
	}
	return f.File.Sync()
}

func (f *faulty) Close() error {
	err := f.File.Close()
	if f.closeErr != nil {
		return f.closeErr
	}
	return err
}

// shortWriter reports a short write without an error, which io.Writer
// forbids; the write must still fail.
type shortWriter struct{ File }

func (s shortWriter) Write(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:len(p)/2]
	}
	return s.File.Write(p)
}

// entries lists the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.txt")
	for _, content := range []string{"first", "second, longer content", ""} {
		if err := WriteFile(p, []byte(content)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil || string(got) != content {
			t.Fatalf("content %q, %v; want %q", got, err, content)
		}
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	if got := entries(t, dir); len(got) != 1 || got[0] != "a.txt" {
		t.Errorf("directory holds %v, want only a.txt", got)
	}
}

func TestWriteStreams(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.bin")
	want := bytes.Repeat([]byte("0123456789abcdef"), 20000) // larger than the buffer
	err := Write(p, func(w io.Writer) error {
		for i := 0; i < len(want); i += 777 {
			if _, err := w.Write(want[i:min(i+777, len(want))]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); !bytes.Equal(got, want) {
		t.Errorf("wrote %d bytes, want %d identical ones", len(got), len(want))
	}
}

// Every failure leaves the old file in place, no temp file behind, and an
// error naming the target.
func TestWriteFailures(t *testing.T) {
	errEncode := errors.New("encoder gave up")
	cases := []struct {
		name  string
		wrap  func(*os.File) File
		write func(io.Writer) error
		want  error
	}{
		{"disk full", func(f *os.File) File { return &faulty{File: f, budget: 10} }, nil, syscall.ENOSPC},
		{"short write", func(f *os.File) File { return shortWriter{f} }, nil, io.ErrShortWrite},
		{"sync", func(f *os.File) File { return &faulty{File: f, budget: 1 << 30, syncErr: syscall.EIO} }, nil, syscall.EIO},
		{"close", func(f *os.File) File { return &faulty{File: f, budget: 1 << 30, closeErr: syscall.EIO} }, nil, syscall.EIO},
		{"encoder", nil, func(w io.Writer) error { w.Write([]byte("partial")); return errEncode }, errEncode},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "f")
			if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			write := c.write
			if write == nil {
				write = func(w io.Writer) error { _, err := w.Write(bytes.Repeat([]byte("x"), 100)); return err }
			}
			err := Options{Wrap: c.wrap}.Write(p, write)
			if !errors.Is(err, c.want) || !strings.HasPrefix(err.Error(), "write "+p+": ") {
				t.Errorf("err = %v, want %v naming %s", err, c.want, p)
			}
			if got, _ := os.ReadFile(p); string(got) != "old" {
				t.Errorf("target now holds %q, want the old content", got)
			}
			if got := entries(t, dir); len(got) != 1 {
				t.Errorf("directory holds %v, want only the target", got)
			}
		})
	}
}

func TestCreateTempFails(t *testing.T) {
	p := filepath.Join(t.TempDir(), "missing", "f")
	if err := WriteFile(p, []byte("x")); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("err = %v, want one naming %s", err, p)
	}
}

func TestIsTemp(t *testing.T) {
	dir := t.TempDir()
	var seen string
	err := Options{Wrap: func(f *os.File) File { seen = filepath.Base(f.Name()); return f }}.WriteFile(filepath.Join(dir, "run.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !IsTemp(seen) {
		t.Errorf("IsTemp(%q) = false for the temp file actually used", seen)
	}
	for name, want := range map[string]bool{
		".run.json.tmp-123": true, "run.json": false, "a.tmp-1": false, ".hidden": false, ".x" + TempMarker: true,
	} {
		if IsTemp(name) != want {
			t.Errorf("IsTemp(%q) = %v, want %v", name, !want, want)
		}
	}
}

package boundedfile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

var small = Limit{What: "test file", Max: 8}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(write("target", "abc"), link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		want       string // content, or the error message
		is         error
	}{
		{"within the bound", write("ok", "12345678"), "12345678", nil},
		{"empty", write("empty", ""), "", nil},
		{"symlink to a regular file", link, "abc", nil},
		{"too large", write("big", "123456789"), filepath.Join(dir, "big") + ": 9 bytes is more than the 8 a test file may hold", ErrTooLarge},
		{"named pipe", fifo, fifo + " is not a regular file (a named pipe)", ErrNotRegular},
		{"character device", "/dev/zero", "/dev/zero is not a regular file (a character device)", ErrNotRegular},
		{"directory", dir, dir + " is not a regular file (a directory)", ErrNotRegular},
		{"missing", filepath.Join(dir, "none"), "", fs.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ReadFile(tc.path, small)
			if tc.is == nil {
				if err != nil || string(b) != tc.want {
					t.Fatalf("ReadFile = %q, %v; want %q", b, err, tc.want)
				}
				return
			}
			if !errors.Is(err, tc.is) {
				t.Fatalf("ReadFile error %v, want one wrapping %v", err, tc.is)
			}
			if tc.want != "" && err.Error() != tc.want {
				t.Errorf("message %q\nwant    %q", err, tc.want)
			}
		})
	}
}

func TestUnboundedRefusesSpecialFiles(t *testing.T) {
	f, size, err := Open("/dev/zero", Unbounded)
	if err == nil {
		f.Close()
		t.Fatalf("Open(/dev/zero) = size %d, no error", size)
	}
	p := filepath.Join(t.TempDir(), "x")
	if err := os.WriteFile(p, bytes.Repeat([]byte{1}, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	f, size, err = Open(p, Unbounded)
	if err != nil || size != 1000 {
		t.Fatalf("Open = %d, %v; want 1000 bytes", size, err)
	}
	f.Close()
}

// A file that grows past the bound after it was checked is still cut at
// the bound.
func TestReadStopsAtTheBound(t *testing.T) {
	_, err := read(strings.NewReader(strings.Repeat("x", 100)), "grown", 4, small)
	if !errors.Is(err, ErrTooLarge) || err.Error() != "grown: more than the 8 bytes a test file may hold" {
		t.Fatalf("read = %v", err)
	}
}

func FuzzReadFile(f *testing.F) {
	f.Add([]byte("config = 1\n"), int64(11))
	f.Add([]byte("0123456789"), int64(3))
	f.Add([]byte{}, int64(0))
	f.Add([]byte{0, 1, 2}, int64(-1))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte, max int64) {
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadFile(p, Limit{What: "fuzz file", Max: max})
		if max >= 0 && int64(len(b)) > max {
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("%d bytes, max %d: err %v, want ErrTooLarge", len(b), max, err)
			}
			return
		}
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("%d bytes, max %d: got %d bytes, %v", len(b), max, len(got), err)
		}
		if gotR, _ := read(bytes.NewReader(b), p, int64(len(b)), Limit{What: "fuzz file", Max: max}); !bytes.Equal(gotR, b) {
			t.Fatalf("read differs from ReadFile")
		}
	})
}

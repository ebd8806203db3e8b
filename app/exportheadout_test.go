package app

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"selmix/core/worker/workertest"
)

// export-head writes its --out as runs export does (atomicfile.Out): a
// symbolic link is written through and stays a link, a named pipe a
// reader has open is written to and stays a pipe.
func TestExportHeadWritesThrough(t *testing.T) {
	t.Setenv(workertest.Env, "ok")
	root := t.TempDir()
	id := start(t, root, fakeConfig(t))
	dir := t.TempDir()

	for _, ext := range []string{".npz", ".npy"} {
		target, link := filepath.Join(dir, "target"+ext), filepath.Join(dir, "link"+ext)
		if ext == ".npy" {
			target, link = filepath.Join(dir, "target_W.npy"), filepath.Join(dir, "link_W.npy")
		}
		os.WriteFile(target, nil, 0o644)
		if err := os.Symlink(filepath.Base(target), link); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "link"+ext)
		if err := ExportHead(&bytes.Buffer{}, root, id, Latest, out); err != nil {
			t.Fatalf("ExportHead to a link (%s): %v", ext, err)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s: the link was replaced (%v)", ext, err)
		}
		if b, _ := os.ReadFile(target); len(b) == 0 {
			t.Errorf("%s: the link's target is empty", ext)
		}
	}

	fifo := filepath.Join(dir, "pipe.npz")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		f, err := os.Open(fifo) // blocks until the writer opens it
		if err != nil {
			got <- nil
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- b
	}()
	// The reader must have the pipe open before ExportHead opens it
	// without blocking; retry until it has.
	var err error
	for range 200 {
		if err = ExportHead(&bytes.Buffer{}, root, id, Latest, fifo); err == nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("ExportHead to a named pipe: %v", err)
	}
	select {
	case b := <-got:
		if !bytes.HasPrefix(b, []byte("PK")) {
			t.Errorf("the pipe's reader got %d bytes, %.8q: want an .npz (a zip)", len(b), b)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("the pipe's reader got nothing in 10 s")
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the named pipe was replaced (%v)", err)
	}
}

package atomicfile

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func hello(w io.Writer) error { _, err := io.WriteString(w, "hello\n"); return err }

// Out writes an output as what its path is: "-" is stdout (it wrote a
// file named "-"), a link is written through and stays a link (as root,
// --csv /dev/stdout replaced the /dev/stdout link with a file), a pipe
// and a device are written to and stay what they are (a FIFO was
// replaced by a file), a pipe without a reader and a directory are
// refused.
func TestOut(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)

	var stdout bytes.Buffer
	if err := Out("-", &stdout, hello); err != nil || stdout.String() != "hello\n" {
		t.Errorf(`"-": %v, stdout %q`, err, stdout.String())
	}
	if _, err := os.Lstat("-"); err == nil {
		t.Error(`"-" created a file named "-"`)
	}

	target := filepath.Join(dir, "target.csv")
	os.WriteFile(target, []byte("old\n"), 0o644)
	link := filepath.Join(dir, "link.csv")
	os.Symlink("target.csv", link)
	if err := Out(link, nil, hello); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&fs.ModeSymlink == 0 {
		t.Error("the link was replaced")
	}
	if b, _ := os.ReadFile(target); string(b) != "hello\n" {
		t.Errorf("the link's target holds %q", b)
	}
	if !OutIsFile(link) || OutIsFile("-") || !OutIsFile(filepath.Join(dir, "new.csv")) {
		t.Error("OutIsFile: a link to a file, - and a new name")
	}

	dangling := filepath.Join(dir, "dangling.csv")
	os.Symlink("nowhere/x.csv", dangling)
	if err := Out(dangling, nil, hello); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("dangling link: %v", err)
	}
	if fi, _ := os.Lstat(dangling); fi.Mode()&fs.ModeSymlink == 0 || OutIsFile(dangling) {
		t.Error("the dangling link was replaced, or is called a file")
	}

	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Out(fifo, nil, hello); err == nil || !strings.Contains(err.Error(), "no process reads") {
		t.Errorf("FIFO without a reader: %v", err)
	}
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := Out(fifo, nil, hello); err != nil {
		t.Fatalf("FIFO with a reader: %v", err)
	}
	buf := make([]byte, 16)
	if n, _ := r.Read(buf); string(buf[:n]) != "hello\n" {
		t.Errorf("the FIFO's reader got %q", buf[:n])
	}
	if fi, _ := os.Lstat(fifo); fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Error("the FIFO was replaced")
	}

	if err := Out(os.DevNull, nil, hello); err != nil {
		t.Errorf("%s: %v", os.DevNull, err)
	}
	if fi, _ := os.Lstat(os.DevNull); fi.Mode()&fs.ModeCharDevice == 0 {
		t.Fatalf("%s is no longer a device", os.DevNull)
	}
	if err := Out(dir, nil, hello); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 4 {
		t.Errorf("%d entries left, want the 4 made (no temp files)", len(ents))
	}
}

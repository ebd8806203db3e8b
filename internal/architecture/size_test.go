package architecture

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxLines bounds a hand-written Go file (tests and generated files
// aside): a file past it holds more than one idea.
const maxLines = 600

// No hand-written Go file is longer than maxLines.
func TestFileSizes(t *testing.T) {
	root := filepath.Join("..", "..")
	files, longest, at := 0, 0, ""
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b[:min(len(b), 512)], []byte("Code generated")) {
			return nil
		}
		files++
		n := bytes.Count(b, []byte("\n"))
		if n > longest {
			longest, at = n, path
		}
		if n > maxLines {
			rel, _ := filepath.Rel(root, path)
			t.Errorf("%s: %d lines, want at most %d: split it by what its parts are about", rel, n, maxLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("%d Go files under %s: the walk missed the tree", files, root)
	}
	t.Logf("%d files; the longest %s, %d lines", files, at, longest)
}

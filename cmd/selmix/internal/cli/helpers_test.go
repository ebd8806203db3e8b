package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sbinet/npyio/npz"
)

func writeFloat32(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := npz.NewWriter(f)
	if err := w.Write("C.npy", []float32{0.5, 0, 0, 0.5}); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return f.Close()
}

// copyRun copies the recorded files of run directory src into dst.
func copyRun(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"config.toml", "run.json", "events.jsonl", "arrays.bin", "summary.json"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

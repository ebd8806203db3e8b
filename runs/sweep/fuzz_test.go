package sweep

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"selmix/runs"
)

// FuzzLoad: no sweep.json panics Load; what it accepts is a sweep of the
// runs root it is in, whose members' runs are <id>-<index>, and what it
// refuses is damage.
func FuzzLoad(f *testing.F) {
	root := f.TempDir()
	dir := filepath.Join(Root(root), "small-beef")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.Fatal(err)
	}
	good := fmt.Sprintf(`{"id":"small-beef","name":"small","created":"2026-01-01T00:00:00Z","runs_root":%q,"workdir":"/","executor":"local","columns":["seed"],"members":[{"index":0,"run":"small-beef-0","vary":["1"]}]}`, root)
	f.Add([]byte(good))
	f.Add([]byte(strings.Replace(good, `"small-beef-0"`, `"../../x\u001b]0;X\u0007"`, 1)))
	f.Add([]byte(strings.Replace(good, root, "/nonexistent/root", 1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, fileName), b, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := Load(dir)
		if err != nil {
			if !errors.Is(err, runs.ErrDamaged) && !strings.Contains(err.Error(), fileName) {
				t.Fatalf("refusal %v is neither damage nor names the file", err)
			}
			return
		}
		if s.Root != root && filepath.Clean(s.Root) != root {
			t.Fatalf("accepted runs_root %q in a sweep of %s", s.Root, root)
		}
		for i, m := range s.Members {
			if m.Run != fmt.Sprintf("%s-%d", s.ID, i) {
				t.Fatalf("accepted member %d run %q", i, m.Run)
			}
		}
	})
}

package runs

import (
	"path/filepath"
	"testing"
)

// Find takes a run directory anywhere, or an id, prefix or name in the
// runs root.
func TestFind(t *testing.T) {
	root, other := t.TempDir(), t.TempDir()
	makeRun(t, root, "20260101-0000-aaaa", "alpha")
	makeRun(t, other, "20260102-0000-bbbb", "beta")
	for _, c := range []struct{ name, arg, want string }{
		{"name", "alpha", "20260101-0000-aaaa"},
		{"prefix", "20260101", "20260101-0000-aaaa"},
		{"directory elsewhere", filepath.Join(other, "20260102-0000-bbbb") + "/", "20260102-0000-bbbb"},
	} {
		r, err := Find(root, c.arg)
		if err != nil || r.Meta.ID != c.want {
			t.Errorf("%s: Find(%q) = %v, %v; want run %s", c.name, c.arg, r, err, c.want)
		}
	}
	if _, err := Find(root, "beta"); err == nil {
		t.Error("Find(beta) found a run of another root")
	}
}

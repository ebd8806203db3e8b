package app

import (
	"testing"

	"selmix/runs"
)

// Two forks never share a name (issue 26: two presses of f gave two live
// runs called keys-test-fork): the first free of base, base-2, base-3, …
func TestFreeName(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	want := []string{"keys-test-fork", "keys-test-fork-2", "keys-test-fork-3"}
	for i, w := range want {
		got, err := freeName(root, "keys-test-fork")
		if err != nil {
			t.Fatal(err)
		}
		if got != w {
			t.Fatalf("fork %d named %q, want %q", i+1, got, w)
		}
		wr, err := runs.Create(root, got, "", runs.Meta{})
		if err != nil {
			t.Fatal(err)
		}
		wr.Close()
	}
	if got, _ := freeName(root, "other"); got != "other" {
		t.Errorf("a free name became %q", got)
	}
}

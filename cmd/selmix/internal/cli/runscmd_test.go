package cli

import (
	"bytes"
	"strings"
	"testing"

	"selmix/runs"
)

// rm asks first: "n" (or nothing) keeps the run, "y" removes it, --yes does
// not ask.
func TestRemoveRunsAsks(t *testing.T) {
	root := t.TempDir()
	var ids []string
	for _, name := range []string{"a", "b"} {
		w, err := runs.Create(root, name, "seed = 1\n", runs.Meta{Status: runs.StatusFinished})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, w.ID())
		w.Close()
	}
	var out bytes.Buffer
	if err := removeRuns(strings.NewReader("n\n"), &out, root, ids[:1], false); err != nil {
		t.Fatal(err)
	}
	if _, err := runs.Open(root, ids[0]); err != nil || !strings.Contains(out.String(), "kept") {
		t.Fatalf("answer n: run gone (%v) or not reported kept:\n%s", err, out.String())
	}
	if err := removeRuns(strings.NewReader("y\n"), &out, root, ids[:1], false); err != nil {
		t.Fatal(err)
	}
	if err := removeRuns(strings.NewReader(""), &out, root, ids[1:], true); err != nil {
		t.Fatal(err)
	}
	if all, _ := runs.List(root); len(all) != 0 {
		t.Errorf("%d runs left after y and --yes, want 0", len(all))
	}
	if err := removeRuns(strings.NewReader("y\n"), &out, root, []string{"nope"}, true); err == nil {
		t.Error("removing an unknown run did not fail")
	}
}

package screen

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"selmix/tui/history"
)

// f in a workbench forks its run through Screens.Fork, from the run's
// runs root, and says where the fork went; x draws the figures.
func TestWorkbenchActions(t *testing.T) {
	t.Parallel()
	var got [][]string
	s := &Screens{Fork: func(root, id, at string, sets []string) (string, error) {
		got = append(got, append([]string{root, id, at}, sets...))
		if at == "bad" {
			return "", errors.New("no checkpoint at bad")
		}
		return "new-run", nil
	}}
	dir := filepath.Join("..", "..", "viz", "testdata", "run", "viz-selmix")
	o := s.Options(history.RunInfo{ID: "viz-selmix", Dir: dir}, nil, false)
	if line, err := o.Fork("best", []string{"finetune.s=2"}); err != nil || !strings.Contains(line, "forked as run new-run") {
		t.Errorf("fork: %q, %v", line, err)
	}
	if _, err := o.Fork("bad", nil); err == nil || !strings.HasPrefix(err.Error(), "fork: no checkpoint") {
		t.Errorf("failed fork: %v", err)
	}
	want := [][]string{{filepath.Dir(dir), "viz-selmix", "best", "finetune.s=2"}, {filepath.Dir(dir), "viz-selmix", "bad"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("forks asked for %q, want %q", got, want)
	}
	if o := (&Screens{}).Options(history.RunInfo{Dir: dir}, nil, false); o.Fork != nil {
		t.Error("without Screens.Fork, f forks anyway")
	}
}

func TestBrowseAfterPassesThrough(t *testing.T) {
	t.Parallel()
	s := &Screens{}
	other := errors.New("boom")
	for _, err := range []error{nil, other} {
		if got := s.BrowseAfter(t.Context(), t.TempDir(), err); got != err {
			t.Errorf("BrowseAfter(%v) = %v", err, got)
		}
	}
}

package screen

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"selmix/core/search"
	"selmix/runs/runstest"
	"selmix/runs/sweep/sweeptest"
	"selmix/tui/compare"
	"selmix/tui/keys"
	"selmix/tui/runstate"
)

// f in a workbench forks its run through Screens.Fork, from the run's
// runs root, and says where the fork went.
func TestWorkbenchActions(t *testing.T) {
	t.Parallel()
	var got [][]string
	s := &Screens{Fork: func(root, id, at string, sets []string) (string, error) {
		got = append(got, append([]string{root, id, at}, sets...))
		switch at {
		case "bad":
			return "", errors.New("no checkpoint at bad")
		case "named":
			return "20261123-1200-819c", nil // a run of the root: its name is said
		}
		return "new-run", nil
	}}
	dir := filepath.Join("..", "..", "viz", "testdata", "run", "viz-selmix")
	o := s.Options(runstate.Info{ID: "viz-selmix", Dir: dir}, nil, false)
	if line, err := o.Fork("best", []string{"finetune.s=2"}); err != nil || !strings.Contains(line, "forked as run new-run") {
		t.Errorf("fork: %q, %v", line, err)
	}
	if _, err := o.Fork("bad", nil); err == nil || !strings.HasPrefix(err.Error(), "fork: no checkpoint") {
		t.Errorf("failed fork: %v", err)
	}
	// The new run is named, not only numbered (issue 46).
	if line, err := o.Fork("named", nil); err != nil || !strings.Contains(line, "forked as run viz-selmix (20261123-1200-819c)") {
		t.Errorf("fork: %q, %v; want the new run's name", line, err)
	}
	want := [][]string{{filepath.Dir(dir), "viz-selmix", "best", "finetune.s=2"}, {filepath.Dir(dir), "viz-selmix", "bad"}, {filepath.Dir(dir), "viz-selmix", "named"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("forks asked for %q, want %q", got, want)
	}
	if o := (&Screens{}).Options(runstate.Info{Dir: dir}, nil, false); o.Fork != nil || o.Export != nil {
		t.Error("without Screens.Fork and Screens.Export, f forks or x exports anyway")
	}
}

// x in a workbench draws the run's figures through Screens.Export, the
// plotting the command line injects, and says the last line it printed:
// into the run's plots/ in its own workbench, into plots-<run> of the
// working directory in a reader's, which never modifies the run (issue
// 46: x in the read-only selmix open rewrote the run's plots/).
func TestExportInjected(t *testing.T) {
	t.Parallel()
	var dirs, outs []string
	s := &Screens{Export: func(w io.Writer, dir, out string) error {
		dirs, outs = append(dirs, dir), append(outs, out)
		if dir == "bad" {
			return errors.New("disk full")
		}
		if out == "" {
			out = dir + "/plots"
		}
		fmt.Fprintf(w, "metrics.png\nwrote 9 figures in %s\n", out)
		return nil
	}}
	got, err := s.Options(runstate.Info{Dir: "runs/a"}, nil, false).Export()
	if err != nil || got != "wrote 9 figures in runs/a/plots" {
		t.Errorf("export: %q, %v; want the last line", got, err)
	}
	if _, err := s.Options(runstate.Info{Dir: "bad"}, nil, false).Export(); err == nil || err.Error() != "export: disk full" {
		t.Errorf("failed export: %v, want export: disk full", err)
	}
	if got, err := s.Options(runstate.Info{Dir: "runs/b"}, nil, true).Export(); err != nil || got != "wrote 9 figures in plots-b" {
		t.Errorf("attached export: %q, %v; want it outside the run", got, err)
	}
	if !reflect.DeepEqual(dirs, []string{"runs/a", "bad", "runs/b"}) || !reflect.DeepEqual(outs, []string{"", "", "plots-b"}) {
		t.Errorf("exported %q into %q", dirs, outs)
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

// The comparison of a sweep's members names each by its values of the
// sweep's columns, not by its generated run name (issue 46); runs that
// are not all members of one sweep keep their names.
func TestCompareNamesSweepMembers(t *testing.T) {
	t.Parallel()
	sw := sweeptest.New(t, sweeptest.SmallSpec, search.ExecLocal)
	other := t.TempDir()
	fixtures := filepath.Join("..", "..", "viz", "testdata", "run")
	// The fixture runs become members 0 (selmix, seed 1) and 5 (uniform,
	// seed 3) of the sweep, and stay themselves in another root.
	ids := []string{"20261123-1200-819c", "20261123-1201-c986"}
	for k, id := range ids {
		member := sw.Members[[]int{0, 5}[k]].Run
		runstest.Copy(t, filepath.Join(fixtures, id), filepath.Join(sw.Root, id), func(name string, b []byte) []byte {
			if name == "run.json" || name == "config.toml" {
				return regexp.MustCompile(`viz-(selmix|uniform)`).ReplaceAll(b, []byte(member))
			}
			return b
		})
		runstest.Copy(t, filepath.Join(fixtures, id), filepath.Join(other, id), nil)
	}
	for _, c := range []struct {
		root string
		want []string
	}{
		{sw.Root, []string{"selmix · 1", "uniform · 3"}},
		{other, []string{"viz-selmix", "viz-uniform"}},
	} {
		cm := compareModel((&Screens{Keys: keys.Default()}).paneContext(), c.root, ids)
		msg, ok := cm.Init()().(compare.DataMsg)
		if !ok || msg.Err != nil || len(msg.Runs) != 2 {
			t.Fatalf("%s: read %+v", c.root, msg)
		}
		var got []string
		for _, r := range msg.Runs {
			got = append(got, r.Label())
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("labels %q, want %q", got, c.want)
		}
		cm.Update(msg)
		if view := cm.Render(); !strings.Contains(view, c.want[1]) {
			t.Errorf("the comparison does not show %q:\n%s", c.want[1], view)
		}
	}
}

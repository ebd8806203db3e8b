package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"selmix/cmd/selmix/internal/selmixtest"
	"selmix/core/search"
	"selmix/runs/live/livetest"
	"selmix/runs/sweep"
)

// randomSpec draws three points of s (log-uniform) and lr (a choice) on
// the built-in experiment, 60 steps each, one seed.
const randomSpec = `name = "rnd"
[base]
"finetune.steps" = 60
"finetune.refresh" = 20
"record.plots" = false
[axes]
"finetune.s" = { log_uniform = [0.5, 4.0] }
"finetune.lr" = [0.001, 0.01]
seed = [1]
[random]
members = 3
seed = 5
`

// --search random draws the members once, records how, runs each to its
// end, and a dry run draws the same members.
func TestSweepRandom(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	dir := livetest.ShortDir(t)
	root := filepath.Join(dir, "runs")
	path := filepath.Join(dir, "rnd.toml")
	if err := os.WriteFile(path, []byte(randomSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"sweep", path, "--search", "random", "--runs", root, "--parallel", "2", "--threads", "1", "--gpus", "none"}
	code, dry, stderr := runCLI(append(args, "--dry-run")...)
	want := "drawn: 3 points drawn at random (members 3, seed 5), each on every seed: 3 members; finetune.s ~ log_uniform(0.5, 4)"
	if code != 0 || !strings.Contains(dry, want) {
		t.Fatalf("dry run: exit %d, %s\n%s\nwant the line %q", code, dry, stderr, want)
	}
	out, code := selmixtest.Code(t, os.Environ(), args...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	m := ashaIDRe.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no sweep id in\n%s", out)
	}
	s, err := sweep.Open(root, m[1])
	if err != nil {
		t.Fatal(err)
	}
	if s.Random == nil || s.Random.Points != 3 || s.Random.Dists["finetune.s"] != "log_uniform(0.5, 4)" || len(s.Members) != 3 {
		t.Fatalf("sweep.json's random %+v, %d members", s.Random, len(s.Members))
	}
	// The members drawn are those the spec draws, and each finished.
	spec, _, err := search.ReadSpec(path)
	if err != nil {
		t.Fatal(err)
	}
	again, _, err := spec.Expand(s.ID, search.Random)
	if err != nil {
		t.Fatal(err)
	}
	for i, mb := range s.Members {
		if strings.Join(mb.Sets, " ") != strings.Join(again[i].Sets, " ") {
			t.Errorf("member %d: %v, the spec draws %v", i, mb.Sets, again[i].Sets)
		}
		x, err := strconv.ParseFloat(mb.Vary[0], 64)
		if err != nil || x < 0.5 || x > 4 {
			t.Errorf("member %d: s = %s", i, mb.Vary[0])
		}
		if !strings.Contains(dry, mb.Vary[0]) {
			t.Errorf("the dry run drew other members: member %d's s = %s is not in\n%s", i, mb.Vary[0], dry)
		}
	}
	if st := selmixtest.Run(t, "sweep", "status", s.ID, "--runs", root); strings.Count(st, "finished") < 3 {
		t.Errorf("status:\n%s", st)
	}
}

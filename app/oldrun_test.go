package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A run recorded before finetune.cov_margin existed (testdata/oldcov: the
// built-in experiment, mean-recall@cov, 60 steps, made by the selmix of
// commit 854b704) replays identical: its config.toml has no cov_margin,
// which for a recorded run means the engine's default, the paper's aim —
// not the built-in experiment's auto, which would change every refresh.
func TestReplayRunBeforeCovMargin(t *testing.T) {
	const id = "20261126-0905-0b2b"
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(filepath.Join("testdata", "oldcov"))); err != nil {
		t.Fatal(err)
	}
	orig, err := OpenRun(root, id)
	if err != nil {
		t.Fatal(err)
	}
	text, err := orig.Config()
	if err != nil || strings.Contains(text, "cov_margin") {
		t.Fatalf("testdata config has cov_margin (or %v): it must predate the key", err)
	}
	c, err := RunConfig(orig)
	if err != nil {
		t.Fatal(err)
	}
	if c.Finetune.CovMargin != 0 {
		t.Fatalf("recorded run reads cov_margin %v, want 0 (what ran)", c.Finetune.CovMargin)
	}
	var out bytes.Buffer
	s := &Session{Root: root, Out: &out, Quiet: true}
	if err := s.Replay(context.Background(), id); err != nil {
		t.Fatalf("Replay: %v\n%s", err, out.String())
	}
	// The run predates the record of its OpenBLAS kernel: on the kernel it
	// was made with (Zen, Haswell) the replay is identical, on another
	// (SkylakeX, Cooperlake, Sandybridge) equal within ReplayTolerance,
	// and it says which.
	got := out.String()
	t.Logf("replay output:\n%s", got)
	if !strings.Contains(got, " is identical to "+id) && !strings.Contains(got, " equals "+id+" within 1e-05 (kernel not recorded, ") {
		t.Errorf("replay output:\n%s", got)
	}
}

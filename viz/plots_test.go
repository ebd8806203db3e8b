package viz

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"selmix/runs/runstest"
)

// The after-run hook writes the figures into the run's plots/ and says
// how long it took; a run it cannot draw gives a warning, not a panic.
func TestExportPlots(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	ents, err := os.ReadDir(filepath.Join("testdata", "run"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, ents[0].Name())
	runstest.Copy(t, filepath.Join(filepath.Join("testdata", "run"), ents[0].Name()), dir, nil)
	var out strings.Builder
	// At a tenth of the default resolution: what the figures show is
	// the golden tests' to check, and at 300 dpi this test took 29 s
	// under the race detector.
	small := Options{DPI: 30}
	if err := exportPlots(&out, dir, small); err != nil {
		t.Fatalf("ExportPlots: %v", err)
	}
	pngs, _ := filepath.Glob(filepath.Join(dir, "plots", "*.png"))
	if len(pngs) != len(FigureNames()) {
		t.Errorf("plots/ has %d PNGs, want %d; hook said %q", len(pngs), len(FigureNames()), out.String())
	}
	if !strings.Contains(out.String(), "figures in") {
		t.Errorf("hook output %q does not report the export", out.String())
	}

	// A run with no refresh yet: the hook reports, never panics.
	if err := os.WriteFile(filepath.Join(dir, "events.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := exportPlots(&out, dir, small); err == nil || !strings.Contains(err.Error(), "no refresh") {
		t.Errorf("ExportPlots of an empty log: error %v, want one saying it has no refresh", err)
	}
}

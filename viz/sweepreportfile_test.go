package viz

import (
	"os"
	"path/filepath"
	"testing"

	"selmix/core/loop"
	"selmix/runs/sweep"
)

// The report's --out is written as every output a person names is
// (atomicfile.Out): a symbolic link is written through and stays a link.
func TestWriteSweepReportThroughLink(t *testing.T) {
	res := &sweep.Results{ID: "sw", Members: 1, Keys: []string{"policy"}, Groups: []*sweep.Group{
		{Key: []string{"selmix"}, Label: "policy=selmix", Members: 1, Summaries: []*loop.Summary{sweepSummary(0.3)}},
	}}
	dir := t.TempDir()
	target, link := filepath.Join(dir, "kept.md"), filepath.Join(dir, "report.md")
	os.WriteFile(target, nil, 0o644)
	if err := os.Symlink("kept.md", link); err != nil {
		t.Fatal(err)
	}
	md, _, err := WriteSweepReport(res, link, SweepOptions{Format: "svg"})
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced (%v)", err)
	}
	if b, _ := os.ReadFile(target); string(b) != md || md == "" {
		t.Errorf("the link's target holds %.80q, want the report", b)
	}
}

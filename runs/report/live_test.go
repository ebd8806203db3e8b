package report

import (
	"bytes"
	"strings"
	"testing"

	"selmix/core/gpu"
	"selmix/runs"
)

// ps shows each live run's GPUs with nvidia-smi's figures for those GPUs
// only.
func TestLiveGPUs(t *testing.T) {
	root := t.TempDir()
	w, err := runs.Create(root, "big", "", runs.Meta{GPUs: []string{"3", "GPU-b"}, WorldSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	asked := 0
	stats := func() ([]gpu.Stat, error) {
		asked++
		return []gpu.Stat{{Index: "0", Util: 0.01, MemUsed: 1 << 30, MemTotal: 80 << 30}, {Index: "3", Util: 0.93, MemUsed: 41 << 30, MemTotal: 80 << 30},
			{Index: "4", UUID: "GPU-b", Util: 0.5, MemUsed: 3 << 29, MemTotal: 40 << 30}}, nil
	}
	var b bytes.Buffer
	if err := Live(&b, root, stats); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if !strings.HasSuffix(strings.TrimSpace(lines[0]), "STATE    GPUS") || !strings.HasSuffix(lines[1], "  3 93% 41/80 GiB, GPU-b 50% 1.5/40 GiB (2 ranks)") || asked != 1 {
		t.Errorf("ps (asked %d):\n%s", asked, b.String())
	}
	if got := GPUsColumn(runs.Meta{GPUs: []string{"3"}}, nil); got != "3" {
		t.Errorf("without figures: %q", got)
	}
	if got := GPUsColumn(runs.Meta{}, nil); got != "-" {
		t.Errorf("without GPUs: %q", got)
	}
}

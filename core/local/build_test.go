package local

import (
	"path/filepath"
	"strings"
	"testing"

	"selmix/core/experiment"
)

// A model checkpoint that cannot be read is named by its key.
func TestLoadModelNamesTheKey(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nope.npz")
	cfg, err := experiment.Load("", []string{"model.checkpoint=" + p})
	if err != nil {
		t.Fatal(err)
	}
	sp, head, err := experiment.LoadData(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadModel(cfg, sp, head); err == nil || !strings.HasPrefix(err.Error(), "model.checkpoint: open "+p) {
		t.Errorf("missing checkpoint: err = %v, want it to name model.checkpoint", err)
	}
}

package export

import (
	"path/filepath"

	"selmix/runs"
	"selmix/runs/record"
)

// Load reads what a comparison needs of r: its event log and its
// config.toml, flattened.
func Load(r *runs.Run) (Run, error) {
	h, err := record.Load(r)
	if err != nil {
		return Run{}, err
	}
	text, err := r.Config()
	if err != nil {
		return Run{}, err
	}
	cfg, err := ParseConfig(text, filepath.Join(r.Dir, "config.toml"))
	if err != nil {
		return Run{}, err
	}
	return Run{Meta: r.Meta, Config: cfg, Hist: h}, nil
}

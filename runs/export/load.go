package export

import (
	"path/filepath"

	"selmix/runs"
	"selmix/runs/record"
)

// Recorded is a recorded run as every export reads it (runs compare, the
// notebook tables, TensorBoard): its metadata and status, its folder, its
// configuration as recorded and flattened, and its event log.
type Recorded struct {
	Meta       runs.Meta
	Status     string // as runs ls shows it (runs.Run.EffectiveStatus)
	Dir        string
	ConfigText string      // config.toml
	Config     runs.Config // ConfigText flattened
	Hist       *record.History
}

// Load reads what the exports need of r: its event log and its
// config.toml, flattened.
func Load(r *runs.Run) (Recorded, error) {
	h, err := record.Load(r)
	if err != nil {
		return Recorded{}, err
	}
	text, err := r.Config()
	if err != nil {
		return Recorded{}, err
	}
	cfg, err := runs.ParseConfig(text, filepath.Join(r.Dir, "config.toml"))
	if err != nil {
		return Recorded{}, runs.Damaged(err)
	}
	return Recorded{Meta: r.Meta, Status: r.EffectiveStatus(), Dir: r.Dir, ConfigText: text, Config: cfg, Hist: h}, nil
}

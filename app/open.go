package app

import (
	"path/filepath"

	"selmix/core/experiment"
	"selmix/runs"
	"selmix/runs/record"
)

// OpenRun opens run id of root; a run that is not there, or not a run,
// is bad input.
func OpenRun(root, id string) (*runs.Run, error) {
	r, err := runs.Open(root, id)
	if err != nil {
		return nil, UsageError{err}
	}
	return r, nil
}

// OpenHistory opens a run and decodes its event log.
func OpenHistory(root, id string) (*runs.Run, *record.History, error) {
	r, err := OpenRun(root, id)
	if err != nil {
		return nil, nil, err
	}
	h, err := record.Load(r)
	if err != nil {
		return nil, nil, err
	}
	return r, h, nil
}

// RunConfig parses the resolved configuration a run was recorded with;
// one that does not parse is bad input.
func RunConfig(r *runs.Run) (experiment.Config, error) {
	text, err := r.Config()
	if err != nil {
		return experiment.Config{}, err
	}
	c, err := experiment.Parse(text, filepath.Join(r.Dir, "config.toml"))
	if err != nil {
		return c, UsageError{err}
	}
	return c, nil
}

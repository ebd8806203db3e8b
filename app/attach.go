package app

import (
	"selmix/runs"
)

// LiveRun finds the run to attach to: run id of root, else (id "") the
// most recently started live run.
func LiveRun(root, id string) (*runs.Run, error) {
	if id != "" {
		r, err := OpenRun(root, id)
		if err != nil {
			return nil, err
		}
		if !r.Live {
			return nil, BadInput("run %s is not live (status %s)%s", r.Meta.ID, r.EffectiveStatus(), resumeHint(r))
		}
		return r, nil
	}
	all, err := runs.List(root)
	if err != nil {
		return nil, err
	}
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].Live {
			return &all[i], nil
		}
	}
	return nil, BadInput("no live run in %s (selmix ps lists runs; selmix run --detach starts one)", root)
}

func resumeHint(r *runs.Run) string {
	if r.EffectiveStatus() == runs.StatusCrashed || r.EffectiveStatus() == runs.StatusStopped {
		return "; `selmix resume " + r.Meta.ID + "` continues it"
	}
	return ""
}

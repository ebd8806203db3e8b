package sweep

import (
	"testing"

	"selmix/runs"
)

func TestCategorize(t *testing.T) {
	run := func(status string, live bool) *runs.Run {
		return &runs.Run{Meta: runs.Meta{Status: status}, Live: live}
	}
	cases := []struct {
		name       string
		run        *runs.Run
		slurm      string
		exec, busy bool
		cat        Category
		active     bool
	}{
		{"finished", run(runs.StatusFinished, false), "COMPLETED", false, false, Finished, false},
		{"finished, task still ending", run(runs.StatusFinished, false), "COMPLETING", false, false, Finished, false},
		{"live", run(runs.StatusRunning, true), "RUNNING", false, false, Running, true},
		{"requeued after a warning", run(runs.StatusStopped, false), "PENDING", false, false, Pending, true},
		{"checkpointing before requeue", run(runs.StatusStopped, false), "RUNNING", false, false, Running, true},
		{"cancelled", run(runs.StatusStopped, false), "CANCELLED", false, false, Failed, false},
		{"crashed, Slurm forgot", run(runs.StatusRunning, false), "", false, false, Failed, false},
		{"error", run(runs.StatusError, false), "FAILED", false, false, Failed, false},
		{"queued", nil, "PENDING", false, false, Pending, true},
		{"task started, run not yet", nil, "RUNNING", false, false, Running, true},
		{"member process starting", nil, "", false, true, Running, true},
		{"cancelled while queued", nil, "CANCELLED", false, false, Failed, false},
		{"waiting for a live local executor", nil, "", true, false, Pending, true},
		{"never started", nil, "", false, false, Pending, false},
	}
	for _, c := range cases {
		cat, active := categorize(c.run, c.slurm, c.exec, c.busy)
		if cat != c.cat || active != c.active {
			t.Errorf("%s: %v active=%v, want %v active=%v", c.name, cat, active, c.cat, c.active)
		}
	}
}

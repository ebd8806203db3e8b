package cli

import (
	"bytes"
	"context"
	"testing"

	"selmix/app"
	"selmix/core/loop"
	"selmix/core/metric"
)

// snapshots is a loop.Source of given snapshots, then the end.
type snapshots []loop.Snapshot

func (s *snapshots) Next(context.Context) (loop.Snapshot, bool) {
	if len(*s) == 0 {
		return loop.Snapshot{}, false
	}
	x := (*s)[0]
	*s = (*s)[1:]
	return x, true
}

// attach --follow's last line says how the run ended, with the exit code
// attach --help documents: finished (the run's own line, unmet coverage
// included, α from the final snapshot) 0, stopped 143, failed, halted or
// crashed 1.
func TestFollowEnd(t *testing.T) {
	h := loop.DefaultHyper()
	refresh := loop.Snapshot{Kind: loop.KindRefresh, Step: 20, Total: 30, State: loop.Running, Hyper: h}
	val := metric.Report{K: 2, Coverage: []float64{0.5, 0.5}}
	short := metric.Report{K: 2, Coverage: []float64{0.5, 0.3}}
	final := func(state loop.State, obj metric.Objective, r metric.Report) loop.Snapshot {
		return loop.Snapshot{Kind: loop.KindFinal, Step: 30, Total: 30, State: state, Hyper: h,
			Summary: &loop.Summary{Steps: 30, Objective: obj, ValAfter: r}}
	}
	for _, tc := range []struct {
		name   string
		snaps  []loop.Snapshot
		code   int
		stdout string // the line printed, for a run that finished
		err    string // the error, where it did not
	}{
		{"finished", []loop.Snapshot{refresh, final(loop.Finished, metric.MinRecall, val)}, 0,
			"run R finished at step 30: /runs/R\n", ""},
		{"finished, coverage unmet", []loop.Snapshot{refresh, final(loop.Finished, metric.MeanRecallCov, short)}, 0,
			"run R finished at step 30 (coverage constraint unmet on validation: 1 of 2 met, α/K = 0.4750): /runs/R\n", ""},
		{"stopped", []loop.Snapshot{refresh, final(loop.Stopped, metric.MinRecall, val)}, app.ExitSIGTERM,
			"", "run R stopped at step 30; resumable with: selmix resume R"},
		{"halted", []loop.Snapshot{refresh, {Kind: loop.KindFinal, Step: 20, State: loop.Stopped, Hyper: h}}, app.ExitFailure,
			"", "run R stopped at step 20: its trainer could not go on (/runs/R/output.log says why); `selmix resume R` continues it"},
		{"failed", []loop.Snapshot{refresh, {Kind: loop.KindError, Step: 25, State: loop.Failed, Err: "validation at step 25: NaN"}}, app.ExitFailure,
			"", "run R failed at step 25: validation at step 25: NaN"},
		{"crashed", []loop.Snapshot{refresh, {Kind: loop.KindStep, Step: 23, State: loop.Running}}, app.ExitFailure,
			"", "run R crashed: its process ended after step 23 without a final record; `selmix resume R` continues it from its last checkpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := snapshots(tc.snaps)
			f := &followEnd{src: &src}
			for _, ok := f.Next(context.Background()); ok; _, ok = f.Next(context.Background()) {
			}
			var w bytes.Buffer
			err := f.result(&w, "R", "/runs/R")
			got := ""
			if err != nil {
				got = err.Error()
			}
			if code := app.ExitCode(err); code != tc.code || got != tc.err || w.String() != tc.stdout {
				t.Errorf("exit %d, printed %q, error %q;\nwant %d, %q, %q", code, w.String(), got, tc.code, tc.stdout, tc.err)
			}
		})
	}
}

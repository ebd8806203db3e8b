package report

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"selmix/core/loop"
	"selmix/core/metric"
)

// A session that began at a checkpoint counts its own steps (issue 26).
func TestPrintSummarySteps(t *testing.T) {
	t.Parallel()
	s := &loop.Summary{Steps: 3698, Seconds: 5, TestObjBefore: make([]float64, 10), TestObjAfter: make([]float64, 10)}
	for _, c := range []struct {
		from int
		want string
	}{
		{0, "* optimized objective; 3698 fine-tuning steps in 5.0s\n"},
		{2408, "* optimized objective; 1290 fine-tuning steps in this session (steps 2408 to 3698) in 5.0s\n"},
	} {
		var b bytes.Buffer
		Summary(&b, s, c.from)
		if !strings.HasSuffix(b.String(), c.want) {
			t.Errorf("from %d: ends %q, want %q", c.from, b.String()[max(0, b.Len()-100):], c.want)
		}
	}
}

// sliceSource hands out snapshots, then ends.
type sliceSource []loop.Snapshot

func (s *sliceSource) Next(context.Context) (loop.Snapshot, bool) {
	if len(*s) == 0 {
		return loop.Snapshot{}, false
	}
	v := (*s)[0]
	*s = (*s)[1:]
	return v, true
}

// The headless line names ψ of the objective and the true worst recall
// apart (issue 26: "min-recall 0.0111 … min-rec 0.0060").
func TestProgressLineNamesBothNumbers(t *testing.T) {
	t.Parallel()
	h := loop.DefaultHyper()
	h.Objective = metric.MinRecall
	rs := &loop.Refresh{Step: 300, K: 2, Psi: 0.5643,
		Report: metric.Report{K: 2, MeanRecall: 0.8016, MinRecall: 0.478, HMean: 0.7565, MinCoverage: 0.067, Accuracy: 0.8016},
		P:      []float64{0.1, 0.6, 0.2, 0.1}}
	src := sliceSource{{Kind: loop.KindRefresh, Step: 300, Total: 2000, Hyper: h, Refresh: rs}}
	var b bytes.Buffer
	Progress(context.Background(), &b, &src, false)
	const want = "step   300/2000  ψ min-recall 0.5643  mean-rec 0.8016  worst-rec 0.4780  hmean 0.7565  min-cov 0.0670  acc 0.8016  P: 3.0 pairs, top (0,1) 0.60\n" // exp(entropy) = 2.97
	if b.String() != want {
		t.Errorf("progress line\n got %q\nwant %q", b.String(), want)
	}
}

// With a coverage margin in force the headless line's ψ is aimed at
// α/K + δ, not the objective's reported ψ: named "ψ aimed" (issue 46).
func TestProgressLineNamesAimedPsi(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		margin loop.Margin
		want   string
	}{
		{0, "step   300/2000  ψ mean-recall@cov 0.0372  mean-rec 0.8016"},
		{loop.MarginAuto, "step   300/2000  ψ aimed mean-recall@cov 0.0372  mean-rec 0.8016"},
		{0.002, "step   300/2000  ψ aimed mean-recall@cov 0.0372  mean-rec 0.8016"},
	} {
		h := loop.DefaultHyper()
		h.Objective, h.CovMargin = metric.MeanRecallCov, c.margin
		rs := &loop.Refresh{Step: 300, K: 2, Psi: 0.0372, Report: metric.Report{K: 2, MeanRecall: 0.8016}}
		src := sliceSource{{Kind: loop.KindRefresh, Step: 300, Total: 2000, Hyper: h, Refresh: rs}}
		var b bytes.Buffer
		Progress(context.Background(), &b, &src, false)
		if !strings.HasPrefix(b.String(), c.want) {
			t.Errorf("margin %v: progress line %q, want it to begin %q", c.margin, b.String(), c.want)
		}
	}
}

// When the linear step keeps failing, the headless output says so once,
// in one line, with what to try.
func TestProgressWarnsLinearFailing(t *testing.T) {
	t.Parallel()
	h := loop.DefaultHyper()
	h.Refresh, h.Adapt = 50, loop.AdaptNone
	var src sliceSource
	for i, real := range []float64{-0.01, 0.01, -0.02, -0.01, -0.03, -0.01} {
		pred := 0.02
		rs := &loop.Refresh{Step: 50 * (i + 1), K: 2, Psi: 0.5, Predicted: &pred, Realised: &real,
			Report: metric.Report{K: 2}}
		src = append(src, loop.Snapshot{Kind: loop.KindRefresh, Step: rs.Step, Total: 2000, Hyper: h, Refresh: rs})
	}
	var b bytes.Buffer
	Progress(context.Background(), &b, &src, false)
	const want = "step   250  warning: the linear step is failing: 4 of the last 5 refreshes moved ψ the other way — try a smaller s (now 10), finetune.refresh 10 or finetune.adapt = lr\n"
	if got := b.String(); strings.Count(got, "warning:") != 1 || !strings.Contains(got, want) {
		t.Errorf("progress output:\n%s\nwant one warning %q", got, want)
	}
}

// A control refused for its key printed the key's raw bytes in attach
// --follow (an OSC title change "\x1b]0;KEYPWN\x07", from a client of the
// socket or an ack from a hostile run): the line shows it escaped.
func TestProgressControlEscaped(t *testing.T) {
	t.Parallel()
	key := "\x1b]0;KEYPWN\x07"
	src := sliceSource{{Kind: loop.KindControl, Step: 40, Ack: &loop.Ack{
		Control: loop.Control{Op: loop.OpSet, Key: key, Value: "1\u009b2J"}, Err: "unknown key " + key}}}
	var b bytes.Buffer
	Progress(context.Background(), &b, &src, false)
	if got, want := b.String(), "step    40  control set =1\uFFFD2J refused: unknown key \n"; got != want {
		t.Errorf("progress line\n got %q\nwant %q", got, want)
	}
}

// A run that cannot learn (its starting model predicts one class) is said
// once, at the first refresh, in the headless output and in the summary
// (issue #37, bug 9).
func TestProgressWarnsCannotLearn(t *testing.T) {
	t.Parallel()
	one := metric.Report{K: 2, Coverage: []float64{1, 0}, Recall: []float64{1, 0}, Accuracy: 0.5}
	var src sliceSource
	for i := range 3 {
		rs := &loop.Refresh{Step: 50 * i, K: 2, Report: one}
		src = append(src, loop.Snapshot{Kind: loop.KindRefresh, Step: rs.Step, Total: 300, Hyper: loop.DefaultHyper(), Refresh: rs})
	}
	var b bytes.Buffer
	Progress(context.Background(), &b, &src, false)
	const want = "step     0  warning: the starting model predicts class 0 for 100% of validation (accuracy 0.5000)"
	if got := b.String(); strings.Count(got, "warning:") != 1 || !strings.Contains(got, want) || !strings.Contains(got, "--pretrain full") {
		t.Errorf("progress output:\n%s\nwant one warning %q", got, want)
	}
	b.Reset()
	Summary(&b, &loop.Summary{Objective: metric.MinRecall, ValBefore: one, ValAfter: one, TestBefore: one, TestAfter: one,
		TestObjBefore: make([]float64, len(metric.Objectives())), TestObjAfter: make([]float64, len(metric.Objectives()))}, 0)
	if !strings.Contains(b.String(), "warning: the starting model predicts class 0") {
		t.Errorf("summary:\n%s\nwant the warning", b.String())
	}
}

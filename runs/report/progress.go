package report

import (
	"context"
	"fmt"
	"io"
	"math"

	"selmix/core/loop"
	"selmix/internal/safetext"
)

// Progress writes a line per refresh, control and error of src's
// snapshots until src ends (run --headless, attach --follow); quiet only
// drains them. A linear step that keeps failing adds a warning line.
func Progress(ctx context.Context, w io.Writer, src loop.Source, quiet bool) {
	var linear loop.LinearWatch
	first := true
	for {
		s, ok := src.Next(ctx)
		if !ok {
			return
		}
		if quiet {
			continue
		}
		switch s.Kind {
		case loop.KindRefresh:
			r := s.Refresh
			fmt.Fprintf(w, "step %5d/%d  %s %s %.4f  mean-rec %.4f  worst-rec %.4f  hmean %.4f  min-cov %.4f  acc %.4f%s\n",
				s.Step, s.Total, loop.PsiLabel(s.Hyper.Aimed()), s.Hyper.Objective, r.Psi, r.Report.MeanRecall, r.Report.MinRecall, r.Report.HMean,
				r.Report.MinCoverage, r.Report.Accuracy, pairsNote(r.P, r.K))
			if first {
				if why := loop.CannotLearn(r.Report, r.G); why != "" {
					fmt.Fprintf(w, "step %5d  warning: %s\n", s.Step, why)
				}
				first = false
			}
			if r.Predicted != nil && r.Realised != nil && linear.Add(*r.Predicted, *r.Realised) {
				fmt.Fprintf(w, "step %5d  warning: %s\n", s.Step, linear.Advice(s.Hyper))
			}
		case loop.KindControl:
			if s.Ack != nil {
				safetext.Fprintf(w, "step %5d  control %s", s.Step, s.Ack.Control.Tagged())
				if s.Ack.Err != "" {
					safetext.Fprintf(w, " refused: %s", s.Ack.Err)
				}
				fmt.Fprintln(w)
			}
		case loop.KindError:
			safetext.Fprintf(w, "step %5d  error: %s\n", s.Step, s.Err)
		}
	}
}

// pairsNote describes P in a progress line; a viewer that did not ask for
// the matrices (attach --follow) has none.
func pairsNote(P []float64, K int) string {
	if len(P) == 0 || len(P) != K*K {
		return ""
	}
	return fmt.Sprintf("  P: %.1f pairs, top %s", effectivePairs(P), topPair(P, K))
}

// effectivePairs is exp(entropy(P)): how many pairs the mixup
// distribution effectively spreads over.
func effectivePairs(P []float64) float64 {
	h := 0.0
	for _, p := range P {
		if p > 0 {
			h -= p * math.Log(p)
		}
	}
	return math.Exp(h)
}

// topPair names the most likely pair as "(i,j) p".
func topPair(P []float64, K int) string {
	best := 0
	for i, p := range P {
		if p > P[best] {
			best = i
		}
	}
	return fmt.Sprintf("(%d,%d) %.2f", best/K, best%K, P[best])
}

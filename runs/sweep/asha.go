package sweep

import (
	"errors"
	"fmt"
	"strings"

	"selmix/core/metric"
	"selmix/runs/record"
)

// RungPsi is what ranks member i at a rung whose refresh is at step upTo:
// the validation ψ (of a.Metric, else of the objective it optimized) at
// its run's last refresh at or before upTo, and that refresh's step. It
// is an error when the run has not reached upTo.
func (s *Sweep) RungPsi(i, upTo int) (psi float64, at int, err error) {
	if s.ASHA == nil {
		return 0, 0, errors.New("not a successive-halving sweep")
	}
	r, err := s.Run(i)
	if err != nil {
		return 0, 0, err
	}
	if r == nil {
		return 0, 0, fmt.Errorf("member %d has no run", i)
	}
	h, err := record.Load(r)
	if err != nil {
		return 0, 0, err
	}
	return rankAt(h, r.Meta.ID, i, upTo, s.ASHA.Metric)
}

// rankAt is what ranks member i, whose run id h holds, at a refresh due
// at step upTo: the validation value of metric by (RankSeries), else ψ
// of the objective it optimized, at its last refresh at or before upTo, and that refresh's
// step. It is an error when the run has not reached upTo.
func rankAt(h *record.History, id string, i, upTo int, by string) (psi float64, at int, err error) {
	reached := 0
	switch {
	case h.Final != nil:
		reached = h.Final.Steps
	case h.Stopped() != nil:
		reached = h.Stopped().Steps
	}
	if reached < upTo {
		return 0, 0, fmt.Errorf("member %d: run %s stands at step %d, before its rung's refresh at step %d", i, id, reached, upTo)
	}
	for j := len(h.Refreshes) - 1; j >= 0; j-- {
		rf := &h.Refreshes[j]
		if rf.Step > upTo {
			continue
		}
		if by == "" {
			return rf.Stats.Psi, rf.Step, nil
		}
		return RankSeries(by).Value(rf), rf.Step, nil
	}
	return 0, 0, fmt.Errorf("member %d: run %s has no refresh at or before step %d", i, id, upTo)
}

// RankSeries is the catalogue's series a search's metric names (a plan's
// Metric, search.RankMetric): an objective's ψ or a reported metric.
func RankSeries(by string) record.Series {
	if s, ok := record.LookupSeries(by); ok && strings.HasPrefix(by, "metrics/") {
		return s
	}
	return record.ObjectiveSeries(metric.Objective(by))
}

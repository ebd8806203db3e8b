package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"selmix/core/search"
	"selmix/internal/boundedfile"
	"selmix/internal/jsonfloat"
	"selmix/runs"
)

// ScheduleName is the successive-halving schedule's log in a sweep
// folder: one decision per line, appended as it is taken.
const ScheduleName = "asha.log"

// scheduleFile bounds the log: a few lines per member and rung.
var scheduleFile = boundedfile.Limit{What: "asha.log", Max: 256 << 20}

// Decision ops.
const (
	// OpSend sends a member to a rung: it starts (rung 0) or is promoted.
	OpSend = "send"
	// OpReport says a member reached its rung, with the ψ it is ranked by.
	OpReport = "report"
)

// Decision is one line of the schedule's log.
type Decision struct {
	Op     string `json:"op"`
	Member int    `json:"member"`
	Rung   int    `json:"rung"`
	// StopAt is, for a send, the step the member stops at (0: its end).
	StopAt int `json:"stop_at,omitempty"`
	// Rank and Of are, for a promotion, its rank by ψ among the Of
	// members that had reached the rung below.
	Rank int `json:"rank,omitempty"`
	Of   int `json:"of,omitempty"`
	// Step and Psi are, for a report, the refresh ranked and its ψ.
	Step int              `json:"step,omitempty"`
	Psi  *jsonfloat.Float `json:"psi,omitempty"`
	Time string           `json:"time"` // RFC3339
}

// PsiValue is a report's ψ (NaN where it has none).
func (d Decision) PsiValue() float64 {
	if d.Psi == nil {
		return math.NaN()
	}
	return float64(*d.Psi)
}

// Assignment is a member sent to a rung.
type Assignment struct{ Member, Rung int }

// Schedule is the state of a successive-halving sweep: the decisions
// taken so far, replayed from its log. Its next decision (Next) is a
// function of them alone, so a schedule resumed from its log decides
// what the uninterrupted one would have, given the same reports.
type Schedule struct {
	a         *search.ASHA
	path      string
	Decisions []Decision

	sent     [][]bool // [member][rung]
	reported [][]bool
	reports  [][]Decision // per rung, in the order they came
	inflight []Assignment // sent and not reported, in order
}

// Schedule reads the schedule of a successive-halving sweep (empty before
// its first decision). A torn last line (a process killed while writing
// it) is left out; any other line that is not a decision the schedule
// could take is damage.
func (s *Sweep) Schedule() (*Schedule, error) {
	if s.ASHA == nil {
		return nil, fmt.Errorf("sweep %s is a grid: it has no schedule", s.ID)
	}
	sc := &Schedule{a: s.ASHA, path: filepath.Join(s.Dir, ScheduleName)}
	n, R := len(s.Members), len(s.ASHA.Rungs)
	sc.sent, sc.reported, sc.reports = make([][]bool, n), make([][]bool, n), make([][]Decision, R)
	for i := range n {
		sc.sent[i], sc.reported[i] = make([]bool, R), make([]bool, R)
	}
	err := readLog(sc.path, scheduleFile, func(line []byte) error {
		var d Decision
		if err := json.Unmarshal(line, &d); err != nil {
			return err
		}
		return sc.apply(d)
	})
	if err != nil {
		return nil, err
	}
	return sc, nil
}

// readLog hands each whole line of the decision log at path to take, in
// order; none when there is no log. A torn last line (a process killed
// while writing it) is left out; a line take refuses is damage.
func readLog(path string, lim boundedfile.Limit, take func(line []byte) error) error {
	b, err := boundedfile.ReadFile(path, lim)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	lines := bytes.Split(b, []byte("\n"))
	// The last piece is what follows the last newline: "" or a torn line.
	for ln, line := range lines[:len(lines)-1] {
		if err := take(line); err != nil {
			return runs.Damaged(fmt.Errorf("%s:%d is damaged: %v", path, ln+1, err))
		}
	}
	return nil
}

// apply takes d into the state, refusing one the schedule could not have
// taken.
func (sc *Schedule) apply(d Decision) error {
	n, R := len(sc.sent), len(sc.a.Rungs)
	if d.Member < 0 || d.Member >= n || d.Rung < 0 || d.Rung >= R {
		return fmt.Errorf("member %d, rung %d: out of range", d.Member, d.Rung)
	}
	i, k := d.Member, d.Rung
	switch d.Op {
	case OpSend:
		if sc.sent[i][k] || k > 0 && !sc.reported[i][k-1] {
			return fmt.Errorf("member %d sent to rung %d twice, or before it reached rung %d", i, k, k-1)
		}
		sc.sent[i][k] = true
		sc.inflight = append(sc.inflight, Assignment{i, k})
	case OpReport:
		if !sc.sent[i][k] || sc.reported[i][k] {
			return fmt.Errorf("member %d reported at rung %d without being sent there, or twice", i, k)
		}
		sc.reported[i][k] = true
		sc.reports[k] = append(sc.reports[k], d)
		sc.inflight = slices.DeleteFunc(sc.inflight, func(j Assignment) bool { return j == Assignment{i, k} })
	default:
		return fmt.Errorf("unknown op %q", d.Op)
	}
	sc.Decisions = append(sc.Decisions, d)
	return nil
}

// InFlight are the members sent to a rung that have not reported there,
// in the order they were sent: running, or stopped on the way (to resume).
func (sc *Schedule) InFlight() []Assignment { return slices.Clone(sc.inflight) }

// Ranked is the reports at rung k, best first: by ψ, highest first, ψ
// that is not a number last, and in the order they came where ψ ties.
func (sc *Schedule) Ranked(k int) []Decision {
	rs := slices.Clone(sc.reports[k])
	slices.SortStableFunc(rs, func(a, b Decision) int {
		x, y := a.PsiValue(), b.PsiValue()
		switch {
		case math.IsNaN(x) && math.IsNaN(y), x == y:
			return 0
		case math.IsNaN(x):
			return 1
		case math.IsNaN(y):
			return -1
		case x > y:
			return -1
		}
		return 1
	})
	return rs
}

// Next is the schedule's next decision, ASHA's get_job: from the highest
// rung down, a member among the top ⌊n/η⌋ of the n that reached a rung
// and not yet promoted goes to the next rung; else the first member never
// started starts at rung 0. With no member left to start and none in
// flight, a rung that would promote none promotes its best one, so that
// a finite grid ends with a member run to the end. It returns false when
// there is nothing to do now (or ever: Complete).
func (sc *Schedule) Next() (Decision, bool) {
	if d, ok := sc.promote(false); ok {
		return d, true
	}
	if fresh := slices.IndexFunc(sc.sent, func(s []bool) bool { return !s[0] }); fresh >= 0 {
		return Decision{Op: OpSend, Member: fresh, Rung: 0, StopAt: sc.a.StopAt(fresh, 0)}, true
	}
	if len(sc.inflight) == 0 {
		return sc.promote(true)
	}
	return Decision{}, false
}

// promote finds, from the highest rung down, a member among the top
// ⌊n/η⌋ of the n that reached a rung (with atLeastOne, at least the
// best) that has not gone on to the next.
func (sc *Schedule) promote(atLeastOne bool) (Decision, bool) {
	for k := sc.a.Top() - 1; k >= 0; k-- {
		rs := sc.Ranked(k)
		top := len(rs) / sc.a.Eta
		if atLeastOne && len(rs) > 0 {
			top = max(top, 1)
		}
		for r, d := range rs[:top] {
			if !sc.sent[d.Member][k+1] {
				return Decision{Op: OpSend, Member: d.Member, Rung: k + 1, StopAt: sc.a.StopAt(d.Member, k+1), Rank: r + 1, Of: len(rs)}, true
			}
		}
	}
	return Decision{}, false
}

// Complete reports whether the schedule has taken its last decision and
// every member sent has reported.
func (sc *Schedule) Complete() bool {
	_, more := sc.Next()
	return !more && len(sc.inflight) == 0
}

// Take records d (from Next, or a report) at the end of the log, synced,
// and then in the state. Only the process holding the sweep's lock may
// call it.
func (sc *Schedule) Take(d Decision) error {
	d.Time = time.Now().Format(time.RFC3339)
	if err := sc.check(d); err != nil {
		return err
	}
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	if err := appendLine(sc.path, b); err != nil {
		return err
	}
	return sc.apply(d)
}

// Report records that member i reached rung k, ranked by psi at its
// refresh at step.
func (sc *Schedule) Report(i, k, step int, psi float64) error {
	f := jsonfloat.Float(psi)
	return sc.Take(Decision{Op: OpReport, Member: i, Rung: k, Step: step, Psi: &f})
}

// check is apply's refusal without applying.
func (sc *Schedule) check(d Decision) error {
	n, R := len(sc.sent), len(sc.a.Rungs)
	if d.Member < 0 || d.Member >= n || d.Rung < 0 || d.Rung >= R {
		return fmt.Errorf("schedule: member %d, rung %d: out of range", d.Member, d.Rung)
	}
	switch {
	case d.Op == OpSend && (sc.sent[d.Member][d.Rung] || d.Rung > 0 && !sc.reported[d.Member][d.Rung-1]),
		d.Op == OpReport && (!sc.sent[d.Member][d.Rung] || sc.reported[d.Member][d.Rung]),
		d.Op != OpSend && d.Op != OpReport:
		return fmt.Errorf("schedule: %s of member %d at rung %d is not a decision it can take now", d.Op, d.Member, d.Rung)
	}
	return nil
}

// appendLine appends b and a newline to the log at path, first cutting a
// torn last line (one without its newline), and syncs it.
func appendLine(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	end, err := f.Seek(0, 2)
	if err != nil {
		return err
	}
	keep := end
	if end > 0 {
		// Find the last newline, reading back in blocks.
		buf := make([]byte, 4096)
		keep = 0
		for at := end; at > 0; {
			n := int64(len(buf))
			if at < n {
				n = at
			}
			at -= n
			if _, err := f.ReadAt(buf[:n], at); err != nil {
				return err
			}
			if j := bytes.LastIndexByte(buf[:n], '\n'); j >= 0 {
				keep = at + int64(j) + 1
				break
			}
		}
	}
	if keep != end {
		if err := f.Truncate(keep); err != nil {
			return err
		}
	}
	if _, err := f.WriteAt(append(b, '\n'), keep); err != nil {
		return err
	}
	return f.Sync()
}

// Reached is the highest rung member i reported at (-1: none).
func (sc *Schedule) Reached(i int) int {
	for k := len(sc.a.Rungs) - 1; k >= 0; k-- {
		if sc.reported[i][k] {
			return k
		}
	}
	return -1
}

// Sent is the rung member i is in flight to (-1: none).
func (sc *Schedule) Sent(i int) int {
	for _, j := range sc.inflight {
		if j.Member == i {
			return j.Rung
		}
	}
	return -1
}

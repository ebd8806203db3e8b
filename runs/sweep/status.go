package sweep

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"text/tabwriter"

	"selmix/core/loop"
	"selmix/core/search"
	"selmix/internal/safetext"
	"selmix/runs"
	"selmix/runs/record"
)

// Category sums a member's state up.
type Category int

const (
	Pending  Category = iota // queued, or not started
	Running                  // its process runs
	Finished                 // its run finished
	Failed                   // stopped, crashed, failed, cancelled: resume it
	// AtRung: successive halving stopped it at a rung, where it waits to
	// be promoted, or stays once the schedule is complete.
	AtRung
)

func (c Category) String() string {
	return [...]string{"pending", "running", "finished", "failed", "at a rung"}[c]
}

// MemberStatus is one member as the run store (and Slurm) see it.
type MemberStatus struct {
	Index   int
	Values  []string // per column, for display
	RunID   string   // "" before its run exists
	State   string   // the run's effective status; "" without a run
	Slurm   string   // its latest array task's state; "" when unknown or local
	Step    int
	Total   int       // 0 when unknown
	Psi     float64   // ψ at the last refresh (validation); NaN before one
	Best    float64   // best ψ so far; NaN before a refresh
	History []float64 // ψ at every refresh
	// TestEnd and TestBest are the optimized ψ on test at the last step
	// and at the best step (the model the run keeps); NaN until the run
	// finished (and, at best, if it kept none).
	TestEnd, TestBest float64
	Category          Category
	Active            bool     // running or queued: it changes without anyone acting
	Err               string   // what kept its state from being read
	GPUs              []string // the GPUs it runs (or ran) on, as CUDA_VISIBLE_DEVICES names them; nil when unknown
	// Rung is, in a successive-halving sweep, the rung it reached ("1")
	// and the one it is on its way to ("1→2"), as steps; "" in a grid.
	Rung string
	// Gen is, in a population, the generations it ended ("2") and, once a
	// copy, the member its run continues ("2 ←3"); "" otherwise.
	Gen string
	// Now is, in a population, the explored settings in force at its
	// run's last refresh ("s=1.557 lr=0.012"); "" otherwise or before one.
	Now string
}

// Status is a sweep's members now.
type Status struct {
	ID, Executor string
	Columns      []string
	Slurm        bool // the sweep went to Slurm: members have task states
	Members      []MemberStatus
	ExecutorLive bool     // a local executor holds the sweep
	Notes        []string // e.g. Slurm could not be asked
	// ASHA is a successive-halving sweep's plan (nil for a grid) and
	// Complete whether its schedule is.
	ASHA     *search.ASHA
	Complete bool
	// PBT is a population's plan (nil otherwise), Gen the generation it
	// runs and Exploits how many it took; Complete says it is done.
	PBT      *search.PBT
	Gen      int
	Exploits int
}

// Count is the number of members in category c.
func (st *Status) Count(c Category) int {
	n := 0
	for _, m := range st.Members {
		if m.Category == c {
			n++
		}
	}
	return n
}

// Done reports whether nothing is running or queued any more.
func (st *Status) Done() bool {
	for _, m := range st.Members {
		if m.Active {
			return false
		}
	}
	return true
}

// Resumable lists the members `sweep resume` starts again: not finished,
// not running or queued, readable.
func (st *Status) Resumable() []int {
	var out []int
	for _, m := range st.Members {
		if m.Category != Finished && m.Category != AtRung && !m.Active && m.Err == "" {
			out = append(out, m.Index)
		}
	}
	return out
}

// Summary is the one-line count.
func (st *Status) Summary() string {
	line := fmt.Sprintf("%d members: %d finished, %d running, %d pending, %d failed",
		len(st.Members), st.Count(Finished), st.Count(Running), st.Count(Pending), st.Count(Failed))
	if st.ASHA != nil {
		line += fmt.Sprintf(", %d at a rung", st.Count(AtRung))
	}
	if st.PBT != nil {
		line += fmt.Sprintf(", %d between generations", st.Count(AtRung))
	}
	return line
}

// Reader reads a sweep's status again and again, re-reading a run's log
// only when it has grown.
type Reader struct {
	s       *Sweep
	cluster Cluster // nil: Slurm is not asked
	mu      sync.Mutex
	cache   map[string]*logCache // by run directory
}

type logCache struct {
	meta    runs.Meta // run.json when the log was read
	total   int
	history []float64
	// the optimized ψ on test at the end and at the best step (NaN: none)
	testEnd, testBest float64
	hyper             *loop.Hyper // the researcher's at the last refresh, in a population; nil before one
}

// NewReader reads s; cl is asked for the array tasks' states when s has
// been submitted to Slurm (nil: never asked).
func NewReader(s *Sweep, cl Cluster) *Reader {
	if len(s.Jobs) == 0 {
		cl = nil
	}
	return &Reader{s: s, cluster: cl, cache: map[string]*logCache{}}
}

// Status reads every member's state. Its reads are those of the run store
// (run.json, the event log) and, on Slurm, squeue (and sacct when the
// cluster keeps accounting).
func (r *Reader) Status(ctx context.Context) (*Status, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.s
	st := &Status{ID: s.ID, Executor: s.Executor, Columns: s.Columns, Slurm: r.cluster != nil, ExecutorLive: s.ExecutorLive(), ASHA: s.ASHA, PBT: s.PBT}
	var po *Population
	if s.PBT != nil {
		var err error
		if po, err = s.Population(); err != nil {
			st.Notes = append(st.Notes, "the population: "+err.Error())
		} else {
			st.Complete, st.Gen = po.Complete(), po.Gen()
			for _, d := range po.Decisions {
				if d.Op == PBTExploit {
					st.Exploits++
				}
			}
		}
	}
	var sc *Schedule
	if s.ASHA != nil {
		var err error
		if sc, err = s.Schedule(); err != nil {
			st.Notes = append(st.Notes, "the schedule: "+err.Error())
		} else {
			st.Complete = sc.Complete()
		}
	}
	var tasks map[int]string
	if r.cluster != nil {
		var err error
		if tasks, err = r.cluster.Tasks(ctx, s); err != nil {
			st.Notes = append(st.Notes, "slurm: "+err.Error())
		}
	}
	byName, err := s.Runs()
	if err != nil {
		return nil, err
	}
	for i, m := range s.Members {
		ms := MemberStatus{Index: i, Psi: math.NaN(), Best: math.NaN(), TestEnd: math.NaN(), TestBest: math.NaN(), Slurm: tasks[i]}
		for _, v := range m.Vary {
			ms.Values = append(ms.Values, search.Display(v))
		}
		var run *runs.Run
		if po != nil {
			run, err = pickNamed(i, po.RunName(i), byName)
		} else {
			run, err = s.pick(i, byName)
		}
		if err != nil {
			ms.Err = err.Error()
		}
		if run != nil {
			ms.RunID, ms.State, ms.Step = run.Meta.ID, run.EffectiveStatus(), run.Meta.Steps
			if run.Meta.BestStep >= 0 && !run.Broken() {
				ms.Best = run.Meta.Best
			}
			if lc, err := r.log(run); err != nil {
				ms.Err = err.Error()
			} else {
				ms.Total, ms.History = lc.total, lc.history
				ms.TestEnd, ms.TestBest = lc.testEnd, lc.testBest
				if n := len(lc.history); n > 0 {
					ms.Psi = lc.history[n-1]
				}
				if s.PBT != nil && lc.hyper != nil {
					ms.Now = settingsText(lc.hyper, s.PBT.Keys)
				}
			}
		}
		ms.Category, ms.Active = categorize(run, ms.Slurm, st.ExecutorLive, s.memberBusy(i))
		if sc != nil {
			ms.Rung = rungText(s.ASHA, sc.Reached(i), sc.Sent(i))
			if sc.Reached(i) >= 0 && sc.Sent(i) < 0 && ms.Category == Failed {
				// Stopped at its rung: promoted when the schedule goes on.
				ms.Category, ms.Active = AtRung, st.ExecutorLive && !st.Complete
			}
		}
		if po != nil {
			ended := 0
			for g := range s.PBT.Gens() {
				if po.Reported(i, g) != nil {
					ended = g + 1
				}
			}
			ms.Gen = fmt.Sprint(ended)
			if e := po.Exploited(i); e != nil {
				ms.Gen += fmt.Sprintf(" ←%d", e.From)
			}
			if ended > 0 && ended < s.PBT.Gens() && ms.Category == Failed && run != nil && run.Meta.Status == runs.StatusStopped {
				// Stopped at its generation's end: it goes on when the
				// population does.
				ms.Category, ms.Active = AtRung, st.ExecutorLive && !st.Complete
			}
		}
		ms.GPUs = memberGPUs(run, s.Devices(i), ms.Category)
		st.Members = append(st.Members, ms)
	}
	return st, nil
}

// memberGPUs are a member's GPUs: those the local executor gave it while
// it runs, else those its run recorded (its worker's hello: on Slurm, the
// GPUs Slurm bound), else those it was given last.
func memberGPUs(run *runs.Run, assigned []string, c Category) []string {
	if c == Running && assigned != nil || run == nil || len(run.Meta.GPUs) == 0 {
		return assigned
	}
	var out []string
	for _, g := range run.Meta.GPUs {
		if g = safetext.Cut(g, 80); g != "" && len(out) < 64 {
			out = append(out, g)
		}
	}
	return out
}

// HasGPUs reports whether some member has GPUs: tables show the column.
func (st *Status) HasGPUs() bool {
	for _, m := range st.Members {
		if len(m.GPUs) > 0 {
			return true
		}
	}
	return false
}

// GPUsText is the member's GPUs, "0,1", or "-".
func (m MemberStatus) GPUsText() string { return orDash(strings.Join(m.GPUs, ",")) }

// categorize decides a member's category from its run, its Slurm task
// and whether an executor or a member process holds it.
func categorize(run *runs.Run, slurm string, executorLive, busy bool) (Category, bool) {
	switch {
	case run != nil && run.EffectiveStatus() == runs.StatusFinished:
		return Finished, false
	case run != nil && run.Live, busy:
		return Running, true
	}
	switch SlurmClass(slurm) {
	case SlurmRunning:
		return Running, true // its process is starting, or checkpointing
	case SlurmQueued:
		return Pending, true // also a task that requeued itself
	}
	if run != nil || SlurmClass(slurm) == SlurmEnded {
		// Stopped, crashed, failed, or a task that ended without
		// finishing its run (cancelled before it started, say).
		return Failed, false
	}
	// Not started: queued behind a live local executor, or left so.
	return Pending, executorLive
}

// log reads what the status shows from a run's event log, again only if
// run.json changed since the last read: the recorder updates it after
// every refresh and at the end, after the event is in the log.
func (r *Reader) log(run *runs.Run) (*logCache, error) {
	m := run.Meta
	if c := r.cache[run.Dir]; c != nil && sameMeta(c.meta, m) {
		return c, nil
	}
	h, err := record.Load(run)
	if err != nil {
		return nil, err
	}
	c := &logCache{meta: m, testEnd: math.NaN(), testBest: math.NaN()}
	if f := h.Final; f != nil {
		c.testEnd, c.testBest = OptimizedColumn.After(f), OptimizedColumn.Best(f)
	}
	if len(h.Starts) > 0 {
		c.total = h.Starts[0].Total
	}
	for _, rf := range h.Refreshes {
		c.history = append(c.history, rf.Stats.Psi)
	}
	if n := len(h.Refreshes); n > 0 && r.s.PBT != nil {
		// The researcher's settings, as a copy takes them (Settings).
		if rs, err := researcherOf(run, h); err == nil {
			if hy, err := rs.at(h.Refreshes[n-1].Step); err == nil {
				c.hyper = &hy
			}
		}
	}
	r.cache[run.Dir] = c
	return c, nil
}

func sameMeta(a, b runs.Meta) bool {
	return a.Steps == b.Steps && a.Status == b.Status && a.BestStep == b.BestStep &&
		(a.Best == b.Best || math.IsNaN(a.Best) && math.IsNaN(b.Best))
}

// WriteTable prints one line per member and the summary line.
func (st *Status) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"#"}
	for _, c := range ShortNames(st.Columns) {
		head = append(head, strings.ToUpper(c))
	}
	head = append(head, "RUN", "STATE")
	if st.ASHA != nil {
		head = append(head, "RUNG")
	}
	if st.PBT != nil {
		head = append(head, "GEN", "NOW")
	}
	if st.Slurm {
		head = append(head, "SLURM")
	}
	gpus := st.HasGPUs()
	if gpus {
		head = append(head, "GPUS")
	}
	head = append(head, "STEP", "ψ NOW", "BEST ψ")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, m := range st.Members {
		row := append([]string{fmt.Sprint(m.Index)}, m.ValueTexts()...)
		row = append(row, orDash(m.RunID), m.StateText())
		if st.ASHA != nil {
			row = append(row, orDash(m.Rung))
		}
		if st.PBT != nil {
			row = append(row, orDash(m.Gen), orDash(m.Now))
		}
		if st.Slurm {
			row = append(row, m.SlurmText())
		}
		if gpus {
			row = append(row, m.GPUsText())
		}
		row = append(row, m.StepText(), m.PsiText(), m.BestText())
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, m := range st.Members {
		if m.Err != "" {
			fmt.Fprintf(w, "member %d: %s\n", m.Index, m.Err)
		}
	}
	for _, n := range st.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	if a := st.ASHA; a != nil {
		state := "not complete"
		if st.Complete {
			state = "complete"
		}
		spent := 0
		for _, m := range st.Members {
			spent += m.Step
		}
		grid := len(st.Members) * a.Rungs[a.Top()]
		fmt.Fprintf(w, "asha: rungs at %s steps, eta %d; schedule %s; %d steps of the grid's %d\n", search.JoinInts(a.Rungs, ", "), a.Eta, state, spent, grid)
	}
	if p := st.PBT; p != nil {
		state := "not complete"
		if st.Complete {
			state = "complete"
		}
		fmt.Fprintf(w, "pbt: %d generations of %d steps; generation %d; %d exploits; population %s%s\n", p.Gens(), p.Interval, st.Gen, st.Exploits, state, st.bestText())
	}
	_, err := fmt.Fprintln(w, st.Summary())
	return err
}

// rungText is a member's rung as status shows it, in steps: the rung it
// reached ("150"), the one it is on its way to ("150→300", "→50"), ""
// before it was sent.
func rungText(a *search.ASHA, reached, sent int) string {
	t := ""
	if reached >= 0 {
		t = fmt.Sprint(a.Rungs[reached])
	}
	if sent >= 0 {
		t += fmt.Sprintf("→%d", a.Rungs[sent])
	}
	return t
}

// StateText is the run's state, or what a member without a run waits for.
func (m MemberStatus) StateText() string {
	switch {
	case m.State != "":
		return m.State
	case m.Category == Running:
		return "starting"
	case m.Category == Failed:
		return "not run"
	case m.Active:
		return "queued"
	}
	return "not started"
}

// StepText is "step/total", "step" or "-".
func (m MemberStatus) StepText() string {
	switch {
	case m.RunID == "":
		return "-"
	case m.Total > 0:
		return fmt.Sprintf("%d/%d", m.Step, m.Total)
	}
	return fmt.Sprint(m.Step)
}

// PsiText and BestText are ψ now and the best ψ, "-" before a refresh.
func (m MemberStatus) PsiText() string  { return num(m.Psi) }
func (m MemberStatus) BestText() string { return num(m.Best) }

// TestEndText and TestBestText are the optimized ψ on test at the last
// step and at the best step, "-" where there is none.
func (m MemberStatus) TestEndText() string  { return num(m.TestEnd) }
func (m MemberStatus) TestBestText() string { return num(m.TestBest) }

// SlurmText is the Slurm task's state, "-" when unknown.
func (m MemberStatus) SlurmText() string { return orDash(m.Slurm) }

// ValueTexts are the member's column values, "-" where it has none.
func (m MemberStatus) ValueTexts() []string {
	out := make([]string, len(m.Values))
	for i, v := range m.Values {
		out[i] = orDash(v)
	}
	return out
}

// Label names the member in a narrow legend by its values: "uniform · 3".
func (m MemberStatus) Label() string { return Label(m.Values) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func num(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.4f", x)
}

// settingsText is the keys' values in h: "s=1.557 lr=0.012".
func settingsText(h *loop.Hyper, keys []string) string {
	var parts []string
	for _, k := range keys {
		if v, ok := h.Get(k); ok {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, " ")
}

// bestText is, for a population, the member leading now: the highest ψ
// at its run's last refresh, "; leading: member 3 (ψ 0.7343, s=1.557
// lr=0.012)"; "" before any refresh.
func (st *Status) bestText() string {
	best := -1
	for i, m := range st.Members {
		if !math.IsNaN(m.Psi) && (best < 0 || m.Psi > st.Members[best].Psi) {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	m := st.Members[best]
	t := fmt.Sprintf("; leading: member %d (ψ %.4f", m.Index, m.Psi)
	if m.Now != "" {
		t += ", " + m.Now
	}
	return t + ")"
}

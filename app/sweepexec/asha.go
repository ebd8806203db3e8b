package sweepexec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"selmix/core/search"
	"selmix/runs/sweep"
)

// ASHAResult is how a session of a successive-halving schedule ended.
type ASHAResult struct {
	Complete bool               // the schedule took its last decision and every member sent reported
	Reports  int                // reports taken in this session
	Stopped  []sweep.Assignment // stopped by a signal on the way to their rung: resumable
	Failed   []sweep.Assignment // failed, crashed, or unreadable at their rung
	Signal   os.Signal          // the signal that interrupted the executor, or nil
}

// RunASHA runs s's successive-halving schedule here (docs/sweeps.md,
// "Successive halving"): o.Parallel members at once, each as RunLocal
// runs one, each sent to its next rung with `selmix sweep member DIR I
// --stop-at N` and ranked when it gets there. It first sends again the
// members its log has in flight (a session that was interrupted), then
// takes the schedule's decisions as slots free up, recording each in the
// sweep folder before acting on it. A signal on o.Signals is passed to
// every running member, and nothing more starts. o.Members is not used.
func RunASHA(s *sweep.Sweep, o LocalOptions) (*ASHAResult, error) {
	o.Defaults()
	return runASHA(s, o, &localExec{s: s, o: o, res: &LocalResult{}, running: map[int]*exec.Cmd{}})
}

// runASHA runs s's schedule with r running its members (here, or on
// Slurm), holding the sweep's lock.
func runASHA(s *sweep.Sweep, o LocalOptions, r memberRunner) (*ASHAResult, error) {
	lock, err := lockForMembers(s)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	sc, err := s.Schedule()
	if err != nil {
		return nil, err
	}
	a := &ashaExec{s: s, o: o, sc: sc, quit: make(chan struct{})}
	a.launch = func(d sweep.Decision, ends chan<- jobEnd) { go a.process(r, d, ends) }
	a.forward = r.forward
	a.psi = s.RungPsi
	if sr, ok := r.(*slurmRunner); ok {
		sr.out = a.line
	}
	return a.run()
}

// ashaExec is one session of a schedule: launch runs a member to its
// rung and says how it ended on ends; psi reads what ranks it there.
type ashaExec struct {
	s       *sweep.Sweep
	o       LocalOptions
	sc      *sweep.Schedule
	quit    chan struct{} // closed when a signal came: nothing more starts
	launch  func(d sweep.Decision, ends chan<- jobEnd)
	forward func(sig os.Signal)
	psi     func(i, upTo int) (psi float64, at int, err error)
}

// jobEnd is how a member's process sent to a rung ended.
type jobEnd struct {
	d       sweep.Decision
	code    int   // exit code; -1 killed by a signal
	err     error // it could not start
	skipped bool  // a signal came before it started
	secs    float64
}

func (a *ashaExec) run() (*ASHAResult, error) {
	res := &ASHAResult{}
	queue := a.sc.InFlight()
	ends := make(chan jobEnd)
	running := 0
	var stopErr error
	stop := func() {
		select {
		case <-a.quit:
		default:
			close(a.quit)
		}
	}
	for {
		for running < a.o.Parallel && !closed(a.quit) {
			var d sweep.Decision
			if len(queue) > 0 {
				j := queue[0]
				queue = queue[1:]
				d = sweep.Decision{Op: sweep.OpSend, Member: j.Member, Rung: j.Rung, StopAt: a.s.ASHA.StopAt(j.Member, j.Rung)}
				a.line(j.Member, "resumes to "+a.rung(j.Rung))
			} else if nd, ok := a.sc.Next(); ok {
				if err := a.sc.Take(nd); err != nil {
					stopErr = err
					stop()
					break
				}
				d = nd
				a.sent(d)
			} else {
				break
			}
			running++
			a.launch(d, ends)
		}
		if running == 0 {
			break
		}
		select {
		case e := <-ends:
			running--
			if err := a.ended(e, res); err != nil {
				stopErr = err
				stop()
			}
		case sig := <-a.o.Signals:
			res.Signal = sig
			stop()
			a.forward(sig)
		}
	}
	res.Complete = a.sc.Complete()
	return res, stopErr
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// rung names rung k: "rung 1 (150 steps)", "the end (300 steps)".
func (a *ashaExec) rung(k int) string {
	if k == a.s.ASHA.Top() {
		return fmt.Sprintf("the end (rung %d, %d steps)", k, a.s.ASHA.Rungs[k])
	}
	return fmt.Sprintf("rung %d (%d steps)", k, a.s.ASHA.Rungs[k])
}

// line writes one line about member i.
func (a *ashaExec) line(i int, what string) {
	fmt.Fprintf(a.o.Out, "member %d  %s  %s\n", i, a.s.Describe(i), what)
}

// sent writes the decision that sends a member on.
func (a *ashaExec) sent(d sweep.Decision) {
	if d.Rung == 0 {
		a.line(d.Member, "starts: "+a.rung(0))
		return
	}
	a.line(d.Member, fmt.Sprintf("promoted to %s: %s of %d at rung %d", a.rung(d.Rung), ordinal(d.Rank), d.Of, d.Rung-1))
}

// ended takes how a member's process ended: a member at its rung is
// ranked there (the report recorded); any other end leaves it in flight,
// for sweep resume. The error is one recording the report.
func (a *ashaExec) ended(e jobEnd, res *ASHAResult) error {
	i, k := e.d.Member, e.d.Rung
	j := sweep.Assignment{Member: i, Rung: k}
	switch {
	case e.skipped:
		res.Stopped = append(res.Stopped, j)
		return nil
	case e.err != nil:
		res.Failed = append(res.Failed, j)
		a.line(i, fmt.Sprintf("could not start: %v", e.err))
		return nil
	case e.code == 130 || e.code == 143:
		res.Stopped = append(res.Stopped, j)
		a.line(i, fmt.Sprintf("stopped on the way to %s (exit %d, %.1fs): resumable", a.rung(k), e.code, e.secs))
		return nil
	case e.code < 0:
		res.Failed = append(res.Failed, j)
		a.line(i, fmt.Sprintf("killed on the way to %s (%.1fs): see %s", a.rung(k), e.secs, a.s.LogPath(i)))
		return nil
	case e.code != 0:
		res.Failed = append(res.Failed, j)
		a.line(i, fmt.Sprintf("failed on the way to %s (exit %d, %.1fs): see %s", a.rung(k), e.code, e.secs, a.s.LogPath(i)))
		return nil
	}
	psi, at, err := a.psi(i, a.s.ASHA.Stops[i][k])
	if err != nil {
		res.Failed = append(res.Failed, j)
		a.line(i, fmt.Sprintf("ended, but its rung cannot be read: %v", err))
		return nil
	}
	if err := a.sc.Report(i, k, at, psi); err != nil {
		return err
	}
	res.Reports++
	verb := "reached " + a.rung(k)
	if k == a.s.ASHA.Top() {
		verb = "finished: " + a.rung(k)
	}
	a.line(i, fmt.Sprintf("%s: ψ %.4f at step %d (%.1fs)", verb, psi, at, e.secs))
	return nil
}

// process runs member d.Member's process to its rung (RunLocal's
// process, with --stop-at) and says on ends how it ended. A member still
// run by a process of an executor that was killed is waited for first.
func (a *ashaExec) process(x memberRunner, d sweep.Decision, ends chan<- jobEnd) {
	e := x.runTo(a.quit, d.Member, d.StopAt)
	e.d = d
	ends <- e
}

// runTo runs member i's process (RunLocal's process) to step stopAt (0:
// its end) and says how it ended (its d left zero). A member still run by
// a process of an executor that was killed is waited for first; after
// quit closes, it does not start.
func (x *localExec) runTo(quit chan struct{}, i, stopAt int) jobEnd {
	for x.s.MemberBusy(i) {
		select {
		case <-quit:
			return jobEnd{skipped: true}
		case <-time.After(500 * time.Millisecond):
		}
	}
	var args []string
	if stopAt > 0 {
		args = []string{"--stop-at", strconv.Itoa(stopAt)}
	}
	t0 := time.Now()
	devs := x.take()
	x.mu.Lock()
	if closed(quit) {
		// Checked under the lock forward takes: a member starts before a
		// signal is passed on, or not at all.
		x.mu.Unlock()
		x.put(devs)
		return jobEnd{skipped: true}
	}
	cmd, err := x.start(i, devs, args...)
	if err == nil {
		x.running[i] = cmd
	}
	x.mu.Unlock()
	if err != nil {
		x.put(devs)
		return jobEnd{err: err}
	}
	err = cmd.Wait()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
	}
	x.mu.Lock()
	delete(x.running, i)
	x.mu.Unlock()
	x.put(devs)
	return jobEnd{code: code, secs: time.Since(t0).Seconds()}
}

// ordinal is "1st", "2nd", "3rd", "4th", …
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}

// ExecuteASHA runs s's successive-halving schedule with e, here or on
// Slurm (searchRunner), passing SIGINT and SIGTERM on to its local
// members (then the error is an *Interrupted). It is an error when the
// schedule could not complete: sweep resume continues it.
func ExecuteASHA(ctx context.Context, s *sweep.Sweep, e Execution) error {
	w := e.Out
	fmt.Fprintf(w, "asha: %s\n", describeASHA(s.ASHA))
	o, r, stop := e.searchRunner(s)
	defer stop()
	start := time.Now()
	res, err := runASHA(s, o, r)
	if err != nil {
		return err
	}
	spent := ""
	if st, err := s.Steps(); err == nil {
		spent = fmt.Sprintf("; %d steps of the grid's %d (%.0f%%)", st.Spent, st.Grid, 100*float64(st.Spent)/float64(st.Grid))
	}
	state := "schedule complete"
	if !res.Complete {
		state = "schedule not complete"
	}
	fmt.Fprintf(w, "sweep %s: %s: %d reports, %d stopped, %d failed (%.1fs)%s\n",
		s.ID, state, res.Reports, len(res.Stopped), len(res.Failed), time.Since(start).Seconds(), spent)
	if res.Signal != nil {
		return &Interrupted{ID: s.ID, Signal: res.Signal.(syscall.Signal)}
	}
	if !res.Complete {
		return fmt.Errorf("%d members did not reach their rung; selmix sweep resume %s continues the schedule", len(res.Failed)+len(res.Stopped), s.ID)
	}
	return nil
}

// describeASHA says in one line what a plan does.
func describeASHA(a *search.ASHA) string {
	return fmt.Sprintf("rungs at %s steps (min_steps %d, eta %d); each promotes the top 1/%d of the members that reached it, by validation ψ of %s at its refresh there",
		joinSteps(a.Rungs), a.MinSteps, a.Eta, a.Eta, a.MetricName())
}

func joinSteps(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ", ")
}

// DryRunASHA writes to e.Out what ExecuteASHA would run: the plan, the
// members with the steps of the refreshes each is ranked at (each rung
// rounded up to a refresh, as the plan's align says), and their command.
func DryRunASHA(s *sweep.Sweep, e Execution) error {
	w := e.Out
	a := s.ASHA
	fmt.Fprintf(w, "sweep %s (dry run: nothing written, nothing started): %d members, runs root %s\n", s.ID, len(s.Members), s.Root)
	fmt.Fprintf(w, "asha: %s\n", describeASHA(a))
	for i := range s.Members {
		fmt.Fprintf(w, "  %3d  %-40s  ranked at steps %s  --set %s\n", i, s.Describe(i), joinSteps(a.Stops[i]), strings.Join(s.Members[i].Sets, " --set "))
	}
	if e.Executor == search.ExecSlurm {
		return e.drySearchSlurm(s)
	}
	o, env := e.dryLocal(w)
	fmt.Fprintf(w, "\nwould run %d at a time, each to its next rung: %sOPENBLAS_NUM_THREADS=%d GOMAXPROCS=%d %s sweep member %s INDEX [--stop-at STEP]\n", o.Parallel, env, o.Threads, o.Threads, e.Binary, s.Dir)
	return nil
}

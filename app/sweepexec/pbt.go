package sweepexec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"selmix/core/search"
	"selmix/runs/sweep"
)

// PBTResult is how a session of a population-based sweep ended.
type PBTResult struct {
	Complete bool      // every member reported at the last generation
	Reports  int       // reports taken in this session
	Exploits int       // exploits taken in this session
	Stopped  []int     // members stopped by a signal on the way to their generation's end: resumable
	Failed   []int     // members that failed, crashed, or are unreadable at it
	Signal   os.Signal // the signal that interrupted the executor, or nil
}

// RunPBT runs s's population here (docs/sweeps.md, "Population-based
// training"), generation by generation: every member runs to the
// generation's end (`selmix sweep member DIR I --stop-at N`, o.Parallel
// at once) and reports its ψ there; then the worst copy the best (each
// exploit a fork of the copied member's run at its stop, with explored
// settings, recorded in pbt.log before the fork is made) and the next
// generation runs. A member's process makes its fork when it starts. Every
// decision is a function of the log, so a resumed sweep continues where
// the interrupted one was and decides what it would have. A signal on
// o.Signals is passed to every running member, and nothing more starts.
func RunPBT(s *sweep.Sweep, o LocalOptions) (*PBTResult, error) {
	o.Defaults()
	return runPBT(s, o, &localExec{s: s, o: o, res: &LocalResult{}, running: map[int]*exec.Cmd{}})
}

// runPBT runs s's population with r running its members (here, or on
// Slurm), holding the sweep's lock.
func runPBT(s *sweep.Sweep, o LocalOptions, r memberRunner) (*PBTResult, error) {
	lock, err := lockForMembers(s)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	po, err := s.Population()
	if err != nil {
		return nil, err
	}
	p := &pbtExec{s: s, o: o, po: po, x: r, quit: make(chan struct{})}
	if sr, ok := r.(*slurmRunner); ok {
		sr.out = p.line
	}
	return p.run()
}

// pbtExec is one session of a population-based sweep.
type pbtExec struct {
	s    *sweep.Sweep
	o    LocalOptions
	po   *sweep.Population
	x    memberRunner
	quit chan struct{} // closed when a signal came: nothing more starts
}

func (p *pbtExec) run() (*PBTResult, error) {
	res := &PBTResult{}
	plan := p.s.PBT
	for !p.po.Complete() {
		g := p.po.Gen()
		if !p.po.Ended(g) {
			if err := p.generation(g, res); err != nil || res.Signal != nil || len(res.Failed) > 0 {
				return res, err
			}
			if !p.po.Ended(g) {
				return res, nil
			}
		}
		if g == plan.Gens()-1 {
			break
		}
		if err := p.exploit(g, res); err != nil || res.Signal != nil {
			return res, err
		}
	}
	res.Complete = p.po.Complete()
	return res, nil
}

// generation runs every member that has not reported at generation g to
// its end there, o.Parallel at a time, and records the reports.
func (p *pbtExec) generation(g int, res *PBTResult) error {
	plan := p.s.PBT
	var todo []int
	for i := range p.s.Members {
		if p.po.Reported(i, g) == nil {
			todo = append(todo, i)
		}
	}
	type end struct {
		i int
		e jobEnd
	}
	ends := make(chan end)
	running := 0
	var recErr error
	stop := func() {
		if !closed(p.quit) {
			close(p.quit)
		}
	}
	for len(todo) > 0 || running > 0 {
		for running < p.o.Parallel && len(todo) > 0 && !closed(p.quit) {
			i := todo[0]
			todo = todo[1:]
			running++
			what := fmt.Sprintf("runs generation %d to step %d", g, plan.End(g))
			if e := p.po.Exploited(i); e != nil && e.Gen == g-1 {
				what = fmt.Sprintf("continues from member %d (run %s at step %d) with %s; runs generation %d to step %d", e.From, e.Parent, e.At, strings.Join(e.Sets, " "), g, plan.End(g))
			}
			p.line(i, what)
			go func() { ends <- end{i, p.x.runTo(p.quit, i, plan.StopAt(g))} }()
		}
		if running == 0 {
			break
		}
		select {
		case e := <-ends:
			running--
			if err := p.ended(e.i, g, e.e, res); err != nil && recErr == nil {
				recErr = err
				stop()
			}
		case sig := <-p.o.Signals:
			res.Signal = sig
			stop()
			p.x.forward(sig)
		}
	}
	return recErr
}

// ended takes how member i's process ended: at its generation's end it is
// reported; any other end leaves it to sweep resume. The error is one
// recording the report.
func (p *pbtExec) ended(i, g int, e jobEnd, res *PBTResult) error {
	switch {
	case e.skipped:
		res.Stopped = append(res.Stopped, i)
		return nil
	case e.err != nil:
		res.Failed = append(res.Failed, i)
		p.line(i, fmt.Sprintf("could not start: %v", e.err))
		return nil
	case e.code == 130 || e.code == 143:
		res.Stopped = append(res.Stopped, i)
		p.line(i, fmt.Sprintf("stopped in generation %d (exit %d, %.1fs): resumable", g, e.code, e.secs))
		return nil
	case e.code != 0:
		res.Failed = append(res.Failed, i)
		p.line(i, fmt.Sprintf("failed in generation %d (exit %d, %.1fs): see %s", g, e.code, e.secs, p.s.LogPath(i)))
		return nil
	}
	psi, at, err := p.s.GenPsi(p.po, i, g)
	if err != nil {
		res.Failed = append(res.Failed, i)
		p.line(i, fmt.Sprintf("ended, but its generation's end cannot be read: %v", err))
		return nil
	}
	if err := p.po.Report(i, g, at, psi); err != nil {
		return err
	}
	res.Reports++
	p.line(i, fmt.Sprintf("reached the end of generation %d: ψ %.4f at step %d (%.1fs)", g, psi, at, e.secs))
	return nil
}

// exploit takes generation g's exploits (those the log lacks: a session
// killed while it recorded them took the same) and advances.
func (p *pbtExec) exploit(g int, res *PBTResult) error {
	n := len(p.s.Members)
	psi := make([]float64, n)
	cur := make([]map[string]string, n)
	ids := make([]string, n)
	for i := range n {
		psi[i] = p.po.Reported(i, g).PsiValue()
		vals, id, err := p.s.Settings(p.po, i, g)
		if err != nil {
			return err
		}
		cur[i], ids[i] = vals, id
	}
	at := p.s.PBT.StopAt(g)
	score := func(member, from int, cands [][]string) ([]float64, error) {
		if d := p.po.Exploited(member); d != nil && d.Gen == g {
			return make([]float64, len(cands)), nil // taken already: not taken again
		}
		return forecast(p.o, p.s, ids[from], at, cands)
	}
	exploits, err := p.s.PBT.Decide(g, psi, cur, score)
	if fi := (*forecastInterrupted)(nil); errors.As(err, &fi) {
		// Nothing of this generation's exploits is taken that the log
		// lacks; sweep resume decides them again, the same.
		res.Signal = fi.sig
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range exploits {
		if d := p.po.Exploited(e.Member); d != nil && d.Gen == g {
			continue
		}
		if err := p.po.Exploit(g, e, ids[e.From], at); err != nil {
			return err
		}
		res.Exploits++
		how := "explores"
		if e.Ranked != nil {
			how = fmt.Sprintf("the best forecast of %d explores", len(e.Ranked))
		}
		p.line(e.Member, fmt.Sprintf("ψ %.4f: copies member %d (ψ %.4f) at step %d, %s %s", psi[e.Member], e.From, psi[e.From], at, how, strings.Join(e.Sets, " ")))
	}
	return p.po.Advance(g)
}

func (p *pbtExec) line(i int, what string) {
	fmt.Fprintf(p.o.Out, "member %d  %s  %s\n", i, p.s.Describe(i), what)
}

// describePBT says in one line what a plan does.
func describePBT(p *search.PBT) string {
	return fmt.Sprintf("%d generations of %d steps; at each end the worst %.0f%% copy the best (by validation ψ of %s) and %s",
		p.Gens(), p.Interval, 100*p.Quantile, p.MetricName(), p.ExploreText())
}

// ExecutePBT runs s's population with e, here or on Slurm (searchRunner),
// passing SIGINT and SIGTERM on to its local members (then the error is an
// *Interrupted). It is an error when the population could not complete:
// sweep resume continues it.
func ExecutePBT(ctx context.Context, s *sweep.Sweep, e Execution) error {
	w := e.Out
	fmt.Fprintf(w, "pbt: %s\n", describePBT(s.PBT))
	o, r, stop := e.searchRunner(s)
	defer stop()
	start := time.Now()
	res, err := runPBT(s, o, r)
	if err != nil {
		return err
	}
	state := "population complete"
	if !res.Complete {
		state = "population not complete"
	}
	fmt.Fprintf(w, "sweep %s: %s: %d reports, %d exploits, %d stopped, %d failed (%.1fs)\n",
		s.ID, state, res.Reports, res.Exploits, len(res.Stopped), len(res.Failed), time.Since(start).Seconds())
	if res.Signal != nil {
		return &Interrupted{ID: s.ID, Signal: res.Signal.(syscall.Signal)}
	}
	if !res.Complete {
		return fmt.Errorf("%d members did not reach their generation's end; selmix sweep resume %s continues the population", len(res.Failed)+len(res.Stopped), s.ID)
	}
	return nil
}

// DryRunPBT writes to e.Out what ExecutePBT would run: the plan, the
// first population and their command.
func DryRunPBT(s *sweep.Sweep, e Execution) error {
	w := e.Out
	p := s.PBT
	fmt.Fprintf(w, "sweep %s (dry run: nothing written, nothing started): %d members, runs root %s\n", s.ID, len(s.Members), s.Root)
	fmt.Fprintf(w, "pbt: %s\n", describePBT(p))
	ends := make([]int, p.Gens())
	for g := range ends {
		ends[g] = p.End(g)
	}
	for i := range s.Members {
		fmt.Fprintf(w, "  %3d  %-40s  ranked at steps %s  --set %s\n", i, s.Describe(i), joinSteps(ends), strings.Join(s.Members[i].Sets, " --set "))
	}
	if e.Executor == search.ExecSlurm {
		return e.drySearchSlurm(s)
	}
	o, env := e.dryLocal(w)
	fmt.Fprintf(w, "\nwould run %d at a time, each generation to its end: %sOPENBLAS_NUM_THREADS=%d GOMAXPROCS=%d %s sweep member %s INDEX [--stop-at STEP]\n", o.Parallel, env, o.Threads, o.Threads, e.Binary, s.Dir)
	return nil
}

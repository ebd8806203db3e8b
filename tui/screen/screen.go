// Package screen runs the full-screen programs the commands open — the
// workbench on a recorded run or on a live one it attaches to, the runs
// browser, a sweep's view — and leads from one to another: Enter opens a
// run (attached while a process runs it, read-only otherwise), c
// compares, and quitting a run's workbench comes back to the list it was
// opened from. It links no training library and no plotting library: a
// fork from the workbench goes through Screens.Fork and its figures
// through Screens.Export, which the command line wires.
package screen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	tea "charm.land/bubbletea/v2"

	"selmix/core/loop"
	"selmix/internal/safetext"
	"selmix/runs"
	"selmix/runs/live"
	"selmix/runs/record"
	"selmix/runs/report"
	"selmix/runs/sweep"
	"selmix/tui/browser"
	"selmix/tui/compare"
	"selmix/tui/keys"
	"selmix/tui/pane"
	"selmix/tui/runstate"
	"selmix/tui/style"
	sweepview "selmix/tui/sweep"
	"selmix/tui/whatif"
	"selmix/tui/workbench"
)

// Screens opens the screens; its fields are what all of them share.
type Screens struct {
	// Out receives what is printed once a workbench closes (the summary
	// of a run stopped from it).
	Out      io.Writer
	Keys     *keys.Map
	KeysPath string // where the help says keys can be remapped
	Color    bool
	// Fork starts, in the background, a fork of run id of the runs root
	// root at at (a step, or best) with the overrides sets, and returns
	// the new run's id: what f does in a workbench. Nil: f only says how.
	Fork func(root, id, at string, sets []string) (string, error)
	// Export writes the figures of the run in dir into out ("": the
	// run's plots/) from what is on disk now, reporting progress to w:
	// what x does in a workbench. Nil: x says it is not wired.
	Export func(w io.Writer, dir, out string) error
	// Forecast is the engine's forecast of an interval (train.Preview),
	// which the workbench's what-if preview asks; nil: it has none.
	Forecast whatif.Forecaster
	// Cluster is the Slurm a sweep's view asks for its array tasks'
	// states (the command line wires sweepexec.Commands); nil: never.
	Cluster sweep.Cluster
}

var (
	// ErrBrowse says the user left a run's workbench for the runs
	// browser (workbench.Model.Browse): the caller opens it (BrowseAfter).
	ErrBrowse = errors.New("to the runs browser")
	// ErrInterrupted and ErrTerminated end a screen that SIGINT or
	// SIGTERM stopped.
	ErrInterrupted = errors.New("interrupted")
	ErrTerminated  = errors.New("terminated")
)

// Options are the workbench's on a run described by info and controlled
// through ctl, with f forking it and x drawing its figures; attached says
// the run lives in another process.
func (s *Screens) Options(info runstate.Info, ctl workbench.Controller, attached bool) workbench.Options {
	return workbench.Options{
		Info: info, Ctl: ctl, Keys: s.Keys, KeysPath: s.KeysPath, Color: s.Color, Attached: attached,
		Fork: s.forkAction(filepath.Dir(info.Dir), info.ID), Export: s.exportAction(info.Dir, !attached), Forecast: s.Forecast,
	}
}

// forkAction is what f does in the workbench of run id of root: forks
// start one at a time, so each new run's name is chosen after the
// previous fork's run exists (the fork picks a free one).
func (s *Screens) forkAction(root, id string) func(at string, sets []string) (string, error) {
	if s.Fork == nil {
		return nil
	}
	var mu sync.Mutex
	return func(at string, sets []string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		nid, err := s.Fork(root, id, at, sets)
		if err != nil {
			return "", fmt.Errorf("fork: %v", err)
		}
		name := nid
		if r, err := runs.Open(root, nid); err == nil && r.Meta.Name != "" {
			name = safetext.Line(r.Meta.Name) + " (" + nid + ")"
		}
		return fmt.Sprintf("forked as run %s, running in the background: selmix attach %s", name, nid), nil
	}
}

// exportAction writes the figures of the run in dir from what is on disk
// now: what x does in the workbench. The run's own workbench writes them
// into its plots/; a reader (the read-only workbench, one attached to a
// run another process writes) never modifies the run, and writes them
// into plots-<run folder> of the working directory instead.
func (s *Screens) exportAction(dir string, own bool) func() (string, error) {
	if s.Export == nil {
		return nil
	}
	out := ""
	if !own {
		out = "plots-" + filepath.Base(dir)
	}
	return func() (string, error) {
		var buf bytes.Buffer
		if err := s.Export(&buf, dir, out); err != nil {
			return "", fmt.Errorf("export: %v", err)
		}
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		return lines[len(lines)-1], nil
	}
}

// Recorded shows run r, whose log h holds, in the read-only workbench.
func (s *Screens) Recorded(ctx context.Context, r *runs.Run, h *record.History) error {
	// f opens the fork form here too: the fork starts in the
	// background as `selmix fork` would.
	m, snaps := workbench.Recorded(r, h, workbench.Options{Keys: s.Keys, KeysPath: s.KeysPath, Color: s.Color,
		Fork: s.forkAction(filepath.Dir(r.Dir), r.Meta.ID), Export: s.exportAction(r.Dir, false), Forecast: s.Forecast})
	st := loop.NewStream()
	for _, sn := range snaps {
		st.Publish(sn)
	}
	st.Close()
	if err := workbench.Show(ctx, m, st); err != nil {
		return err
	}
	if m.Browse() {
		return ErrBrowse
	}
	return nil
}

// consoleLines is how many of the worker's last lines an attached
// workbench's console starts with.
const consoleLines = 500

// Attach shows run r, which lives in another process, in the workbench:
// it replays the run's log so every pane has its history, then follows
// the live snapshots. The run outlives the workbench unless the user
// asks to stop it; then the run's summary is printed.
func (s *Screens) Attach(ctx context.Context, r *runs.Run) error {
	sctx, cancel := signal.NotifyContext(ctx, syscall.SIGTERM)
	defer cancel()
	// Subscribe before reading the log: what happens in between arrives
	// twice and is dropped, never missed.
	cl, err := live.DialWait(sctx, r.Dir, live.Hello{Matrices: true, Stats: true})
	if err != nil {
		return err
	}
	defer cl.Close()
	h, err := record.Load(r)
	if err != nil {
		return err
	}
	st := live.ReplayThenFollow(sctx, h, cl)
	o := s.Options(workbench.RunInfo(r, h), cl, true)
	o.LoadMatrices = workbench.LoadMatrices(h)
	o.Console = runs.WorkerLines(r.Dir, consoleLines)
	m := workbench.New(o)
	if err := workbench.Show(sctx, m, st); err != nil {
		return err
	}
	if m.Detached() || !m.Quit() {
		fmt.Fprintln(s.Out, DetachedLine(r.Meta.ID, m.Run().Latest))
		if m.Browse() {
			return ErrBrowse
		}
		return nil
	}
	if m.State() != workbench.Finished && m.State() != workbench.Failed {
		if err := live.Stop(ctx, s.Out, r); err != nil {
			return err
		}
	}
	if h, err = record.Load(r); err != nil {
		return err
	}
	report.Summary(s.Out, h.Final, h.SessionStart())
	fmt.Fprintf(s.Out, "run %s: %s\n", r.Meta.ID, r.Dir)
	return nil
}

// DetachedLine is what the shell shows after the workbench detached
// from run id, whose last snapshot is last: a paused run stays paused.
func DetachedLine(id string, last loop.Snapshot) string {
	if last.State == loop.Paused {
		return fmt.Sprintf("detached; run %s stays paused at step %d (selmix attach %s resumes it · selmix stop %s)", id, last.Step, id, id)
	}
	return fmt.Sprintf("detached; run %s goes on (selmix attach %s · selmix stop %s)", id, id, id)
}

// Open shows run id of root in the workbench: attached while a process
// runs it, read-only otherwise.
func (s *Screens) Open(ctx context.Context, root, id string) error {
	r, err := runs.Open(root, id)
	if err != nil {
		return err
	}
	if r.Live {
		return s.Attach(ctx, r)
	}
	h, err := record.Load(r)
	if err != nil {
		return err
	}
	return s.Recorded(ctx, r, h)
}

// BrowseAfter opens the runs browser over root when err is ErrBrowse,
// and passes any other result through.
func (s *Screens) BrowseAfter(ctx context.Context, root string, err error) error {
	if errors.Is(err, ErrBrowse) {
		return s.Browse(ctx, root)
	}
	return err
}

// Browse shows the runs browser over root. Enter opens the chosen run
// (Open), c compares the marked runs; quitting either comes back to the
// list, with its filter, sort and marks as they were, and what went
// wrong opening a run in its note.
func (s *Screens) Browse(ctx context.Context, root string) error {
	ctx, cancel := signal.NotifyContext(ctx, syscall.SIGTERM)
	defer cancel()
	pc := s.paneContext()
	m := browser.New(pc, root)
	for {
		if err := run(ctx, m); err != nil {
			return err
		}
		act, ids := m.Chosen()
		var err error
		switch act {
		case browser.None:
			return nil
		case browser.Open:
			err = s.Open(ctx, root, ids[0])
		case browser.Compare:
			if err := run(ctx, compareModel(pc, root, ids)); err != nil {
				return err
			}
		}
		if ctx.Err() != nil {
			return ErrTerminated
		}
		if errors.Is(err, ErrBrowse) {
			err = nil // the workbench was left for the list: here it is
		}
		if err != nil {
			m.SetNote(err.Error())
		}
	}
}

// Sweep shows sweep sw; Enter on a member opens its run (Open), c
// compares the members' curves grouped by the sweep's first axis but
// seed, and quitting either comes back here.
func (s *Screens) Sweep(ctx context.Context, sw *sweep.Sweep) error {
	rd := sweep.NewReader(sw, s.Cluster)
	pc := s.paneContext()
	sel := 0
	for {
		m := sweepview.New(pc, sw.ID)
		m.Select(sel)
		pctx, cancel := context.WithCancel(ctx)
		p := tea.NewProgram(m, tea.WithContext(pctx))
		go sweepview.Poll(pctx, rd.Status, p.Send, time.Second)
		_, err := p.Run()
		cancel()
		if err != nil && !errors.Is(err, tea.ErrProgramKilled) {
			return err
		}
		if ids, group, ok := m.Compared(); ok {
			cm := compareModel(pc, sw.Root, ids)
			cm.GroupBy(group)
			if err := run(ctx, cm); err != nil {
				return err
			}
			continue
		}
		i, id, ok := m.Chosen()
		if !ok {
			return nil
		}
		sel = i
		if err := s.Open(ctx, sw.Root, id); err != nil && !errors.Is(err, ErrBrowse) {
			return err // (the sweep's list is the browser here)
		}
	}
}

func (s *Screens) paneContext() *pane.Context {
	return &pane.Context{Theme: style.NewTheme(s.Color), Keys: s.Keys}
}

// compareModel compares runs ids of root. Runs that all are members of
// one sweep are named by their values of its columns ("resample · 2"),
// not by their generated run names.
func compareModel(pc *pane.Context, root string, ids []string) *compare.Model {
	var once sync.Once
	var labels map[string]string // run id → its label; the first read (all the runs) decides
	return compare.New(pc, ids, func(ids []string) ([]*compare.Series, error) {
		rs, err := compare.Load(root, ids)
		if err != nil {
			return nil, err
		}
		once.Do(func() { labels = memberLabels(root, rs) })
		for _, r := range rs {
			if l, ok := labels[r.ID]; ok {
				r.Name = l
			}
		}
		return rs, nil
	})
}

// memberLabels are the narrow labels (sweep.Sweep.Label) of rs by run
// id where they all are members of one sweep in root; nil where not.
func memberLabels(root string, rs []*compare.Series) map[string]string {
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.Name
	}
	ls := sweep.MemberLabels(root, names, (*sweep.Sweep).Label)
	if ls == nil {
		return nil
	}
	out := make(map[string]string, len(rs))
	for i, r := range rs {
		if ls[i] != "" {
			out[r.ID] = safetext.Line(ls[i])
		}
	}
	return out
}

// run runs one full-screen program over m; a signal that ended it is
// ErrInterrupted (SIGINT) or ErrTerminated (SIGTERM).
func run(ctx context.Context, m tea.Model) error {
	_, err := tea.NewProgram(m, tea.WithContext(ctx)).Run()
	switch {
	case errors.Is(err, tea.ErrInterrupted):
		return ErrInterrupted
	case ctx.Err() != nil:
		return ErrTerminated
	}
	return err
}

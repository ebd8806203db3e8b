package app

import (
	"context"
	"io"

	"selmix/core/experiment"
	"selmix/core/loop"
	"selmix/core/train"
	"selmix/runs"
)

// Session is what every lifecycle call of one command shares: where runs
// are recorded, where their output goes, how their progress is shown and
// what the command line prints with. The zero value of each option is
// documented beside it.
type Session struct {
	// Root is the runs root as given (--runs); "" is runs.Root's default.
	Root string
	// Out receives the lifecycle's lines ("run ID (DIR)", progress, the
	// final table).
	Out io.Writer
	// Quiet prints only the final table.
	Quiet bool
	// Serve serves the run's control socket (detached runs, sweeps).
	Serve bool
	// View shows a live run; nil prints progress lines with Progress.
	View Viewer
	// WorkerEnv is added to the environment of a run's worker process
	// (CUDA_VISIBLE_DEVICES from --gpus: GPUEnv); nil: the worker
	// inherits this process's.
	WorkerEnv []string
	// Created is called with a new run's id once it exists on disk (the
	// detached child's handshake); nil: nothing is called.
	Created func(id string)
	// StopAt stops a run that Start or Resume runs at that step exactly,
	// with the checkpoint it resumes from as if never stopped, and
	// returns nil (a sweep's rung: sweep member --stop-at); 0 runs it to
	// its end.
	StopAt int

	// Progress prints a run's snapshots as lines until src ends; nil:
	// nothing is printed.
	Progress func(ctx context.Context, w io.Writer, src loop.Source, quiet bool)
	// Summary prints a run's final table; from is the step its session
	// began at. Nil: no table.
	Summary func(w io.Writer, s *loop.Summary, from int)
	// Plots draws a run's figures into its folder when it ends and
	// record.plots asks for them; nil: none are drawn.
	Plots func(w io.Writer, dir string) error
	// WorkerLog opens the bounded log of a worker's stderr in a run's
	// folder (note tells viewers what it drops); nil: the worker's lines
	// only reach viewers.
	WorkerLog func(dir string, note func(string)) (line func(string), close func())
}

// root is the resolved runs root.
func (s *Session) root() string { return runs.Root(s.Root) }

// Viewer shows a live run: it reads st until it closes (or longer, while
// the user looks at the result) and may Send controls to eng. It returns
// when the user is done; the run has ended or been asked to stop by then.
type Viewer func(ctx context.Context, eng *train.Engine, st *loop.Stream, info ViewInfo) error

// ViewInfo is what a viewer knows of the run besides its snapshots.
type ViewInfo struct {
	ID, Name, Dir string
	ClassNames    []string
	TrainCounts   []int
	Config        experiment.Config
}

// Origin says where a new run begins: the zero value is a fresh run;
// a fork or a replay of one starts from State, a checkpoint of run Parent
// at Step (its best with Best). Controls are applied at their steps.
type Origin struct {
	Parent   string
	Step     int
	Best     bool
	State    []byte
	Controls []loop.Control
}

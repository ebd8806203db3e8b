// Package app is selmix's application layer: the life of a run between
// the command line and the engine. It starts, resumes, forks and replays
// runs, spawns detached ones and serves the child's side of the spawn,
// finds the live run to attach to (runs/live connects to it), starts and
// follows a run's worker, pre-trains, exports a checkpoint's head, starts
// and resumes sweeps and runs their members, and finds and selects runs.
//
// A Session carries what every such call needs (the runs root, the
// output writer, quiet, the viewer and the hooks that print); ExitCode
// classifies the errors they return into the process's exit codes. The
// command line (cmd/selmix/internal/cli) parses flags, builds a Session,
// calls it and prints; the terminal workbench (tui/workbench, tui/screen)
// is wired there, not here.
package app

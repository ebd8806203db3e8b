// Package report writes what selmix tells a person or a script about
// runs: the table of runs ls and its JSON listing, the live runs ps
// lists, everything runs show prints about one run and its JSON object,
// the side-by-side text table of runs compare (docs/run-format.md, "JSON
// listings"), a training run's progress lines and its before/after table.
// Every string read from a run directory is made safe to print
// (internal/safetext) before it reaches a terminal.
package report

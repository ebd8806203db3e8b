// Package report writes what selmix tells a person or a script about
// recorded runs: the table of runs ls and its JSON listing, everything
// runs show prints about one run and its JSON object, and the side-by-side
// text table of runs compare (docs/run-format.md, "JSON listings").
// Every string read from a run directory is made safe to print
// (core/safetext) before it reaches a terminal.
package report

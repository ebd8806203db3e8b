package cli

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"selmix/app"
	"selmix/internal/safetext"
	"selmix/runs"
	"selmix/runs/export"
	"selmix/runs/report"
)

func newRunsCmd() *cobra.Command {
	var root, keysPath string
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "Browse, list, show, compare and remove recorded runs",
		Long: `On a terminal, runs alone opens the runs browser: every run of the runs
root with its status, objective, policy, steps, ψ and tags; / filters
(words, key=value, key~part), r sorts, space marks, Enter opens a run
(attached while it runs), c compares the marked runs. Not on a terminal
it prints the table of runs ls.`,
		Args: withSuggestions(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if isTerminal(cmd.OutOrStdout()) {
				sc, err := newScreens(cmd, keysPath)
				if err != nil {
					return err
				}
				return screenExit(sc.Browse(cmd.Context(), runs.Root(root)))
			}
			return report.List(cmd.OutOrStdout(), runs.Root(root), nil)
		},
	}
	cmd.PersistentFlags().StringVar(&root, "runs", "", "runs root `DIR` (default $SELMIX_RUNS, else ./runs)")
	addKeysFlag(cmd, &keysPath)
	cmd.AddCommand(newRunsLsCmd(&root), newRunsShowCmd(&root), newRunsRmCmd(&root), newRunsCompareCmd(&root))
	cmd.AddCommand(newAnnotateCmds(&root)...)
	cmd.AddCommand(newRunsExportCmd(&root))
	return cmd
}

// newRunsLsCmd is runs ls; root points at the runs command's --runs flag.
func newRunsLsCmd(root *string) *cobra.Command {
	var asJSON bool
	var tags []string
	ls := &cobra.Command{
		Use:   "ls [--tag T]... [--json]",
		Short: "Table of every run: id, name, objective, policy, status, steps, best value, started",
		Long: `ls lists every run of the runs root. With --json it prints a JSON array,
one object per run (docs/run-format.md, "JSON listings"). --tag T lists
only the runs tagged T (repeat it: runs with every tag given).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkTagFlags(tags); err != nil {
				return err
			}
			if asJSON {
				return report.ListJSON(cmd.OutOrStdout(), runs.Root(*root), tags)
			}
			return report.List(cmd.OutOrStdout(), runs.Root(*root), tags)
		},
	}
	ls.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts")
	ls.Flags().StringArrayVar(&tags, "tag", nil, "only runs tagged `T` (repeatable: runs with every tag)")
	return ls
}

// newRunsShowCmd is runs show.
func newRunsShowCmd(root *string) *cobra.Command {
	var asJSON bool
	show := &cobra.Command{
		Use:   "show RUN [--json]",
		Short: "Everything recorded about one run",
		Long: `show prints what is recorded about a run. With --json it prints one JSON
object: the run as ls --json lists it, its configuration, its checkpoints,
the scalars of every refresh, its controls, stops and final summary
(docs/run-format.md, "JSON listings").`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return showRun(cmd.OutOrStdout(), runs.Root(*root), args[0], asJSON)
		},
	}
	show.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts")
	return show
}

// newRunsRmCmd is runs rm.
func newRunsRmCmd(root *string) *cobra.Command {
	var yes bool
	rm := &cobra.Command{
		Use:   "rm RUN... [--yes]",
		Short: "Delete runs (asks first unless --yes)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return removeRuns(cmd.InOrStdin(), cmd.OutOrStdout(), runs.Root(*root), args, yes)
		},
	}
	rm.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask")
	return rm
}

// newRunsCompareCmd is runs compare.
func newRunsCompareCmd(root *string) *cobra.Command {
	var asJSON bool
	var compareCSV bool
	compare := &cobra.Command{
		Use:   "compare RUN... [--json | --csv]",
		Short: "Side by side, a column per run: the config keys that differ, every metric at the last and the best refresh, and on test",
		Long: `compare prints runs side by side, a column per run: the config keys that
differ, and every metric at the last and the best refresh (validation) and
on test before fine-tuning, after it (the last step) and at the best step
(the model the run keeps), with the classes at coverage ≥ α/K. --json
prints one JSON object and --csv one CSV table with a column per run,
holding each metric's final, best, min and max over the refreshes and its
test values (docs/run-format.md, "Tables").`,
		Args: argsWant(2, -1, "at least two runs"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON && compareCSV {
				return app.BadInput("runs compare: --json or --csv, not both")
			}
			return compareRuns(cmd.OutOrStdout(), runs.Root(*root), args, asJSON || compareCSV, asJSON)
		},
	}
	compare.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts")
	compare.Flags().BoolVar(&compareCSV, "csv", false, "print one CSV table, a column per run")
	return compare
}

// printText is safetext.Fprintf: text output with strings selmix did not
// write.
func printText(w io.Writer, format string, args ...any) { safetext.Fprintf(w, format, args...) }

// removeRuns is runs rm. A broken run (a folder holding files of a run
// but no readable run.json: a creation an older selmix had cut off, a
// copy of another run's folder) is removed too, and said to be one.
func removeRuns(in io.Reader, w io.Writer, root string, ids []string, yes bool) error {
	br := bufio.NewReader(in)
	for _, id := range ids {
		r, err := app.OpenRun(root, id)
		if err != nil {
			b, ok := runs.Unreadable(root, id)
			if !ok {
				return err
			}
			r = b
		}
		name := filepath.Base(r.Dir)
		what := name
		if r.Broken() {
			what = "folder " + name + " (a broken run)"
		}
		if !yes {
			if r.Broken() {
				printText(w, "remove %s? [y/N] ", what)
			} else {
				printText(w, "remove run %s (%s, %s, %d steps)? [y/N] ", r.Meta.ID, r.Meta.Name, r.EffectiveStatus(), r.Meta.Steps)
			}
			line, _ := br.ReadString('\n')
			if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
				fmt.Fprintln(w, "kept")
				continue
			}
		}
		if err := runs.Remove(root, name); err != nil {
			return err
		}
		printText(w, "removed %s\n", what)
	}
	return nil
}

// showRun prints runs show of run id of root, as text or JSON.
func showRun(w io.Writer, root, id string, asJSON bool) error {
	r, h, err := app.OpenHistory(root, id)
	if err != nil {
		return err
	}
	if asJSON {
		return report.ShowJSON(w, r, h)
	}
	report.Show(w, r, h)
	if h.Final != nil {
		fmt.Fprintln(w)
		report.Summary(w, h.Final, h.SessionStart())
	}
	return nil
}

// compareRuns prints runs compare of ids of root: the text table, or with
// data its JSON (asJSON) or CSV (export.Compare).
func compareRuns(w io.Writer, root string, ids []string, data, asJSON bool) error {
	rs, err := app.OpenRecorded(root, ids)
	if err != nil {
		return err
	}
	switch {
	case !data:
		return report.Compare(w, rs)
	case asJSON:
		return report.WriteJSON(w, export.Compare(rs))
	}
	return export.Compare(rs).WriteCSV(w)
}

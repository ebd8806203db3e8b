package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"selmix/app"
	"selmix/core/safetext"
	"selmix/runs"
	"selmix/runs/export"
	"selmix/runs/export/table"
)

// newRunsExportCmd is runs export; root points at the runs command's
// --runs flag.
func newRunsExportCmd(root *string) *cobra.Command {
	var csvPath, parquetPath string
	var tags []string
	cmd := &cobra.Command{
		Use:   "export [RUN...] [--tag T]... --csv FILE | --parquet FILE",
		Short: "One table of every run's numbers for notebooks (CSV or Parquet)",
		Long: `export writes two tables of the runs given (default: every run of the runs
root, or those tagged --tag T): FILE, the long table of every number of
every run, one row each (run, step, split, metric, class, value), and
FILE with ".runs" before its extension (runs.csv → runs.runs.csv), one
row per run with its metadata, tags and every config key. docs/run-format.md,
"Tables", says what each column holds and how pandas and polars read them.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if csvPath == "" && parquetPath == "" {
				return app.BadInput("runs export: give --csv FILE or --parquet FILE (or both)")
			}
			if err := checkTagFlags(tags); err != nil {
				return err
			}
			rs, err := selectRuns(cmd.ErrOrStderr(), runs.Root(*root), args, tags)
			if err != nil {
				return err
			}
			var ts []export.Recorded
			for _, r := range rs {
				t, err := export.Load(r)
				if err != nil {
					return err
				}
				ts = append(ts, t)
			}
			w := cmd.OutOrStdout()
			for _, out := range []struct {
				path  string
				write func(string, []export.Recorded) (string, error)
			}{{csvPath, table.WriteCSV}, {parquetPath, table.WriteParquet}} {
				if out.path == "" {
					continue
				}
				runsPath, err := out.write(out.path, ts)
				if err != nil {
					return err
				}
				fmt.Fprintf(w, "%s\n%s\n", safetext.Line(out.path), safetext.Line(runsPath))
			}
			fmt.Fprintf(w, "%d runs\n", len(ts))
			return nil
		},
	}
	cmd.Flags().StringVar(&csvPath, "csv", "", "write the tables as CSV: `FILE` and FILE with .runs before its extension")
	cmd.Flags().StringVar(&parquetPath, "parquet", "", "write the tables as Parquet: `FILE` and FILE with .runs before its extension")
	cmd.Flags().StringArrayVar(&tags, "tag", nil, "with no RUN: only runs tagged `T` (repeatable: runs with every tag)")
	return cmd
}

// selectRuns opens the runs args name (each an id, prefix, name or
// directory), or with none every run of root carrying tags; broken runs
// of root are skipped with a line on errw.
func selectRuns(errw io.Writer, root string, args, tags []string) ([]*runs.Run, error) {
	var out []*runs.Run
	if len(args) > 0 {
		if len(tags) > 0 {
			return nil, app.BadInput("--tag selects runs when no RUN is given")
		}
		for _, a := range args {
			r, err := openStoreRun(root, a)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		return out, nil
	}
	all, err := runs.List(root)
	if err != nil {
		return nil, err
	}
	sel := runs.Tagged(all, tags)
	for i := range sel {
		r := &sel[i]
		if r.Broken() {
			fmt.Fprintf(errw, "selmix: skipped %s\n", safetext.Cut(r.Meta.ID+" ("+r.Meta.Status+")", 200))
			continue
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, app.BadInput("no run in %s%s", root, safetext.Line(tagged(tags)))
	}
	return out, nil
}

func tagged(tags []string) string {
	if len(tags) == 0 {
		return ""
	}
	return " is tagged " + strings.Join(tags, " and ")
}

package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"selmix/app"
	"selmix/internal/atomicfile"
	"selmix/internal/safetext"
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
every run, one row each (run, step, split, metric, class, class_name, value; split
val, test — before and after fine-tuning — or test_best, the model a run
keeps at its best step), and
FILE with ".runs" before its extension (runs.csv → runs.runs.csv), one
row per run with its metadata, tags and every config key. docs/run-format.md,
"Tables", says what each column holds and how pandas and polars read them.
FILE "-" is standard output (the long table only, as for a device or a
pipe); a FILE that is a symbolic link is written through, not replaced.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if csvPath == "" && parquetPath == "" {
				return app.BadInput("runs export: give --csv FILE or --parquet FILE (or both)")
			}
			if err := checkTagFlags(tags); err != nil {
				return err
			}
			rs, err := app.SelectRuns(cmd.ErrOrStderr(), *root, args, tags)
			if err != nil {
				return err
			}
			// Over the whole root (no RUN named), a run whose files are
			// damaged is passed over with a line, as one whose run.json
			// is (SelectRuns); a run named is exported or refused.
			var ts []export.Recorded
			for _, r := range rs {
				t, err := export.Load(r)
				if err != nil && len(args) == 0 && errors.Is(err, runs.ErrDamaged) {
					fmt.Fprintf(cmd.ErrOrStderr(), "selmix: skipped %s (%s)\n", safetext.Line(r.Meta.ID), safetext.Line(err.Error()))
					continue
				}
				if err != nil {
					return err
				}
				ts = append(ts, t)
			}
			if len(ts) == 0 {
				return app.BadInput("runs export: no run to export in %s", safetext.Line(runs.Root(*root)))
			}
			// What was written is said on stdout, unless a table went
			// there ("-", or a device or pipe: /dev/stdout).
			w := cmd.OutOrStdout()
			if (csvPath != "" && !atomicfile.OutIsFile(csvPath)) || (parquetPath != "" && !atomicfile.OutIsFile(parquetPath)) {
				w = cmd.ErrOrStderr()
			}
			if csvPath == "-" && parquetPath == "-" {
				return app.BadInput("runs export: --csv - and --parquet -: only one table can go to standard output")
			}
			for _, out := range []struct {
				path  string
				write func(string, io.Writer, []export.Recorded) (string, error)
			}{{csvPath, table.WriteCSV}, {parquetPath, table.WriteParquet}} {
				if out.path == "" {
					continue
				}
				runsPath, err := out.write(out.path, cmd.OutOrStdout(), ts)
				if err != nil {
					return err
				}
				fmt.Fprintf(w, "%s\n", safetext.Line(out.path))
				if runsPath == "" {
					fmt.Fprintf(w, "(no runs table: %s is not a file; give a file to get both tables)\n", safetext.Line(out.path))
				} else {
					fmt.Fprintf(w, "%s\n", safetext.Line(runsPath))
				}
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

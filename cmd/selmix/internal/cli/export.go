package cli

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"selmix/app"
	"selmix/runs/sweep"
	"selmix/viz"
)

type exportFlags struct {
	format, out, size, metric, runs string
	groupBy                         string
	dpi                             int
	compare                         bool
}

func newExportCmd() *cobra.Command {
	var f exportFlags
	cmd := &cobra.Command{
		Use:   "export RUN | export --compare RUN...",
		Short: "Write publication figures (and their CSVs) of a run, or compare runs",
		Long: `export draws a run's figures from its run directory: every metric over
steps (metrics), per-class recall and coverage before and after fine-tuning
(per-class), the gain matrix and mixup distribution at the start, middle
and end (gain, mixup), the Lagrange multipliers (lambda), s (s), and the
change of ψ each refresh interval's G·P predicted against the change that
happened (linear). Each figure has a CSV beside it with every plotted
number.

With --compare it draws one curve per run of --metric over steps and the
final metrics of every run as grouped bars; --group-by KEY adds one line
per value of the config key KEY (e.g. finetune.policy, or policy): the mean
of --metric over the runs with that value in a ± one standard deviation
band, with the pre-trained baseline, and the final metrics with a bar per
value (compare-final-by-KEY): the mean over its runs with ± one sample
standard deviation whiskers. Runs that all are members of one sweep are
named by their values of its columns (policy=resample seed=2).

RUN is a run id, a unique id prefix or a run name in the runs root, or a
run directory. Figures go to --out (default <run dir>/plots, or ./compare
with --compare).

With --format tensorboard it writes TensorBoard event files of every RUN
given instead, one directory per run under --out (default ./tensorboard),
named by the run's name (with _<id> where two runs share one):
every refresh's numbers as scalars, G and P as images, the config as text
and the HParams plugin's data (docs/run-format.md, "TensorBoard"). View
them with: tensorboard --logdir DIR.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return app.BadInput("export: give a run (id, id prefix, name or directory)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return app.UntilSignal(cmd.Context(), "export interrupted (the files written so far are whole)", func() error {
				return boundFigures(cmd.ErrOrStderr(), "export", func() error { return runExport(cmd.OutOrStdout(), f, args) })
			})
		},
	}
	cmd.Flags().StringVar(&f.format, "format", "png", "figure format: png|svg|pdf|tex, or tensorboard: event files of every RUN for TensorBoard")
	cmd.Flags().StringVar(&f.out, "out", "", "output `DIR`")
	cmd.Flags().IntVar(&f.dpi, "dpi", 300, "png resolution in dots per inch")
	cmd.Flags().StringVar(&f.size, "size", "", "size `WxH` of every figure, unit in (default)|cm|mm|pt|px, e.g. 3.5x2.5in (smaller than a figure's own: laid out larger and scaled down, text with it; a size that would need text under 5 pt is refused); default: each figure's own (7 in or 3.5 in wide)")
	cmd.Flags().BoolVar(&f.compare, "compare", false, "compare the given runs")
	cmd.Flags().StringVar(&f.metric, "metric", "", "with --compare: metric to plot over steps: "+strings.Join(viz.MetricNames(), ", ")+" (default psi:<the runs' shared objective>, else mean_recall; the old names mean-recall, worst-recall, min-recall, min-coverage still work)")
	cmd.Flags().StringVar(&f.groupBy, "group-by", "", "with --compare: also draw the mean ± std of the runs grouped by config `KEY` (curves, and final metrics as bars with whiskers)")
	addRunsFlag(cmd, &f.runs)
	return cmd
}

func runExport(w io.Writer, f exportFlags, args []string) error {
	if f.format == formatTensorBoard {
		return exportTensorBoard(w, f, args)
	}
	o, err := figureOptions(f)
	if err != nil {
		return err
	}
	if f.metric != "" && !f.compare {
		return app.BadInput("--metric goes with --compare")
	}
	if f.groupBy != "" && !f.compare {
		return app.UsageError{Err: errNoGroupBy}
	}
	if !f.compare && len(args) != 1 {
		return app.BadInput("export takes one run (got %d); use --compare to compare runs", len(args))
	}
	var rs []*viz.RunData
	for _, a := range args {
		r, err := openPlotRun(f.runs, a)
		if err != nil {
			return err
		}
		rs = append(rs, r)
	}
	var res *viz.Result
	out := f.out
	if f.compare {
		labelMembers(rs)
		m, groups, key, serr := compareSetup(rs, f)
		if serr != nil {
			return serr
		}
		if out == "" {
			out = "compare"
		}
		res, err = viz.CompareWithGroups(rs, groups, key, m, out, o)
	} else {
		if out == "" {
			out = filepath.Join(rs[0].Dir, "plots")
		}
		res, err = viz.Export(rs[0], out, o)
	}
	if res == nil {
		// Options were rejected before anything was drawn.
		return app.BadInput("%v", err)
	}
	for _, file := range res.Files {
		size := fmt.Sprintf("%.2gx%.2g in", file.Width.Points()/72, file.Height.Points()/72)
		if file.Pixels[0] > 0 {
			size += fmt.Sprintf(", %dx%d px", file.Pixels[0], file.Pixels[1])
		}
		fmt.Fprintf(w, "%s (%s) + %s\n", filepath.Join(out, file.Name), size, file.CSV)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return err
}

// figureOptions are the figure options of f's --format, --dpi and --size.
func figureOptions(f exportFlags) (viz.Options, error) {
	if !slices.Contains(viz.Formats, f.format) {
		return viz.Options{}, app.BadInput("--format %q: want one of %s", f.format, strings.Join(slices.Concat(viz.Formats, []string{formatTensorBoard}), ", "))
	}
	if f.dpi < 10 || f.dpi > 2400 {
		return viz.Options{}, app.BadInput("--dpi %d: want 10 to 2400", f.dpi)
	}
	o := viz.Options{Format: f.format, DPI: f.dpi}
	if f.size != "" {
		var err error
		if o.Width, o.Height, err = viz.ParseSize(f.size, f.dpi); err != nil {
			return viz.Options{}, app.BadInput("--size: %v", err)
		}
		if err := viz.CheckSize(o); err != nil {
			return viz.Options{}, app.BadInput("%v", err)
		}
	}
	return o, nil
}

// compareSetup is what export --compare of rs draws: the metric of
// --metric (default viz.DefaultCompareMetric) and, with --group-by, the
// groups and the whole key.
func compareSetup(rs []*viz.RunData, f exportFlags) (m viz.Metric, groups []viz.Group, key string, err error) {
	m = viz.DefaultCompareMetric(rs)
	if f.metric != "" {
		if m, err = viz.ParseMetric(f.metric); err != nil {
			return m, nil, "", app.BadInput("--metric: %v", err)
		}
	}
	if f.groupBy != "" {
		if groups, key, err = viz.GroupBy(rs, f.groupBy); err != nil {
			if errors.As(err, new(*viz.KeyError)) {
				return m, nil, "", app.BadInput("--group-by %v", err)
			}
			return m, nil, "", err
		}
	}
	return m, groups, key, nil
}

// openPlotRun opens RUN as a directory holding run.json, else by id,
// prefix or name in the runs root (runs.Find), with its history.
func openPlotRun(root, arg string) (*viz.RunData, error) {
	run, err := app.FindRun(root, arg)
	if err != nil {
		return nil, err
	}
	r, err := viz.FromRun(run)
	if err != nil {
		return nil, app.UsageError{Err: err}
	}
	return r, nil
}

// labelMembers names runs that all are members of one sweep by their
// values of its columns in the figures ("policy=resample seed=2"), not by
// their generated run names.
func labelMembers(rs []*viz.RunData) {
	root := filepath.Dir(rs[0].Dir)
	names := make([]string, len(rs))
	for i, r := range rs {
		if filepath.Dir(r.Dir) != root {
			return
		}
		names[i] = r.Meta.Name
	}
	for i, l := range sweep.MemberLabels(root, names, (*sweep.Sweep).Describe) {
		if l != "" {
			rs[i].Meta.Name = l
		}
	}
}

// errNoGroupBy says --group-by was given without --compare.
var errNoGroupBy = errors.New("--group-by goes with --compare")

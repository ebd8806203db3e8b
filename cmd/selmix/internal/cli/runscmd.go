package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"

	"selmix/core/metric"
	"selmix/core/safetext"
	"selmix/runs"
	"selmix/runs/record"
)

// reported are the metrics every run reports, in table order.
var reported = []struct {
	name string
	get  func(metric.Report) float64
}{
	{"mean recall", func(r metric.Report) float64 { return r.MeanRecall }},
	{"worst recall", func(r metric.Report) float64 { return r.MinRecall }}, // the true minimum; ψ min-recall is its smoothed stand-in
	{"H-mean", func(r metric.Report) float64 { return r.HMean }},
	{"G-mean", func(r metric.Report) float64 { return r.GMean }},
	{"min coverage", func(r metric.Report) float64 { return r.MinCoverage }},
	{"min head/tail recall", func(r metric.Report) float64 { return r.MinHTRecall }},
	{"min head/tail coverage", func(r metric.Report) float64 { return r.MinHTCoverage }},
	{"accuracy", func(r metric.Report) float64 { return r.Accuracy }},
}

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
				return browseRuns(cmd, runs.Root(root), keysPath)
			}
			return listRuns(cmd.OutOrStdout(), runs.Root(root), nil)
		},
	}
	cmd.PersistentFlags().StringVar(&root, "runs", "", "runs root `DIR` (default $SELMIX_RUNS, else ./runs)")
	addKeysFlag(cmd, &keysPath)
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
				return listRunsJSON(cmd.OutOrStdout(), runs.Root(root), tags)
			}
			return listRuns(cmd.OutOrStdout(), runs.Root(root), tags)
		},
	}
	ls.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts")
	ls.Flags().StringArrayVar(&tags, "tag", nil, "only runs tagged `T` (repeatable: runs with every tag)")
	show := &cobra.Command{
		Use:   "show RUN [--json]",
		Short: "Everything recorded about one run",
		Long: `show prints what is recorded about a run. With --json it prints one JSON
object: the run as ls --json lists it, its configuration, its checkpoints,
the scalars of every refresh, its controls, stops and final summary
(docs/run-format.md, "JSON listings").`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON {
				return showRunJSON(cmd.OutOrStdout(), runs.Root(root), args[0])
			}
			return showRun(cmd.OutOrStdout(), runs.Root(root), args[0])
		},
	}
	show.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts")
	var yes bool
	rm := &cobra.Command{
		Use:   "rm RUN... [--yes]",
		Short: "Delete runs (asks first unless --yes)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return removeRuns(cmd.InOrStdin(), cmd.OutOrStdout(), runs.Root(root), args, yes)
		},
	}
	rm.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask")
	var compareCSV bool
	compare := &cobra.Command{
		Use:   "compare RUN... [--json | --csv]",
		Short: "Side by side, a column per run: the config keys that differ, every metric at the last and the best refresh, and on test",
		Long: `compare prints runs side by side, a column per run: the config keys that
differ, and every metric at the last and the best refresh (validation) and
before and after fine-tuning (test). --json prints one JSON object and
--csv one CSV table with a column per run, holding each metric's final,
best, min and max over the refreshes and its test values
(docs/run-format.md, "Tables").`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON || compareCSV {
				if asJSON && compareCSV {
					return badInput("runs compare: --json or --csv, not both")
				}
				return compareData(cmd.OutOrStdout(), runs.Root(root), args, asJSON)
			}
			return compareRuns(cmd.OutOrStdout(), runs.Root(root), args)
		},
	}
	compare.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts")
	compare.Flags().BoolVar(&compareCSV, "csv", false, "print one CSV table, a column per run")
	cmd.AddCommand(ls, show, rm, compare)
	cmd.AddCommand(newAnnotateCmds(&root)...)
	cmd.AddCommand(newRunsExportCmd(&root))
	return cmd
}

func openRun(root, id string) (*runs.Run, error) {
	r, err := runs.Open(root, id)
	if err != nil {
		return nil, usageError{err}
	}
	return r, nil
}

// testPsi is the test ψ of r's optimized objective at its end (or where
// it stopped) and at its best checkpoint, from summary.json, each
// labelled with its objective where it is not the OBJECTIVE column's;
// "-" where the run has none (not yet ended, or written before selmix
// kept the best model).
func testPsi(r *runs.Run) (end, atBest string) {
	end, atBest = "-", "-"
	if r.Broken() || r.Meta.Format != runs.Format {
		return end, atBest
	}
	s, err := record.LoadSummary(r)
	if err != nil {
		return end, atBest
	}
	label := func(obj metric.Objective, vals []float64) string {
		i := slices.Index(metric.Objectives(), obj)
		v := fmtAt(vals, i)
		if v != "-" && string(obj) != r.Meta.Objective {
			v = string(obj) + " " + v
		}
		return v
	}
	end = label(s.Objective, s.TestObjAfter)
	if b := s.Best; b != nil {
		atBest = fmt.Sprintf("%s (%d)", label(b.Objective, b.TestObj), b.Step)
	}
	return end, atBest
}

// openHistory opens a run and decodes its event log.
func openHistory(root, id string) (*runs.Run, *record.History, error) {
	r, err := openRun(root, id)
	if err != nil {
		return nil, nil, err
	}
	h, err := record.Load(r)
	if err != nil {
		return nil, nil, err
	}
	return r, h, nil
}

// printText is fmt.Fprintf for text output with strings selmix did not
// write (names, paths, a run directory's contents): each string argument
// is made safe to print in one cell of a row (safetext.Line).
func printText(w io.Writer, format string, args ...any) {
	for i, a := range args {
		if s, ok := a.(string); ok {
			args[i] = safetext.Line(s)
		}
	}
	fmt.Fprintf(w, format, args...)
}

func listRuns(w io.Writer, root string, tags []string) error {
	all, err := runs.List(root)
	if err != nil {
		return err
	}
	if len(all) == 0 {
		printText(w, "no runs in %s\n", root)
		return nil
	}
	if all = filterTagged(all, tags); len(all) == 0 {
		fmt.Fprintf(w, "no run in %s is tagged %s\n", root, safetext.Line(strings.Join(tags, " and ")))
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tOBJECTIVE\tPOLICY\tSTATUS\tSTEPS\tBEST VAL ψ (STEP)\tTEST ψ END\tTEST ψ AT BEST\tSTARTED\tTAGS")
	for _, r := range all {
		m := r.Meta
		best := "-"
		if !r.Broken() && m.BestStep >= 0 {
			best = fmt.Sprintf("%.4f (%d)", m.Best, m.BestStep)
			if m.BestObjective != "" && m.BestObjective != m.Objective {
				best = m.BestObjective + " " + best
			}
		}
		end, atBest := testPsi(&r)
		printText(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", filepath.Base(r.Dir), m.Name, m.Objective, m.Policy,
			r.EffectiveStatus(), m.Steps, best, end, atBest, strings.Replace(m.Created, "T", " ", 1), tagsColumn(m))
	}
	return tw.Flush()
}

// runJSON is one run in runs ls --json (docs/run-format.md).
type runJSON struct {
	ID         string      `json:"id"`
	Name       string      `json:"name"`
	Status     string      `json:"status"`
	Created    string      `json:"created"`
	Objective  string      `json:"objective"`
	Policy     string      `json:"policy"`
	Steps      int         `json:"steps"`
	Best       *record.Num `json:"best"`      // null before the first refresh
	BestStep   *int        `json:"best_step"` // likewise
	BestObj    string      `json:"best_objective,omitempty"`
	Parent     string      `json:"parent"`
	ParentStep int         `json:"parent_step"`
	Format     int         `json:"format"`
	Dir        string      `json:"dir"`
	Live       bool        `json:"live"`
	Pid        int         `json:"pid,omitempty"`
	Tags       []string    `json:"tags"`
	Note       string      `json:"note"`
}

func runRecord(r *runs.Run) runJSON {
	m := r.Meta
	j := runJSON{
		ID: filepath.Base(r.Dir), Name: m.Name, Status: r.EffectiveStatus(), Created: m.Created,
		Objective: m.Objective, Policy: m.Policy, Steps: m.Steps, Parent: m.Parent, ParentStep: m.ParentStep,
		Format: m.Format, Dir: r.Dir, Live: r.Live, Pid: r.Pid, Tags: m.Tags, Note: m.Note,
	}
	if j.Tags == nil {
		j.Tags = []string{}
	}
	if !r.Broken() && m.BestStep >= 0 {
		best, step := record.Num(m.Best), m.BestStep
		j.Best, j.BestStep, j.BestObj = &best, &step, m.BestObjective
	}
	return j
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func listRunsJSON(w io.Writer, root string, tags []string) error {
	all, err := runs.List(root)
	if err != nil {
		return err
	}
	all = filterTagged(all, tags)
	out := make([]runJSON, 0, len(all))
	for i := range all {
		out = append(out, runRecord(&all[i]))
	}
	return writeJSON(w, out)
}

func showRunJSON(w io.Writer, root, id string) error {
	r, h, err := openHistory(root, id)
	if err != nil {
		return err
	}
	text, err := r.Config()
	if err != nil {
		return err
	}
	var cfg map[string]any
	if _, err := toml.Decode(text, &cfg); err != nil {
		return fmt.Errorf("%s/config.toml: %w", r.Dir, err)
	}
	ck, err := r.Checkpoints()
	if err != nil {
		return err
	}
	if ck == nil {
		ck = []int{}
	}
	return writeJSON(w, struct {
		runJSON
		Config      map[string]any `json:"config"`
		Checkpoints []int          `json:"checkpoints"`
		record.Scalars
	}{runRecord(r), cfg, ck, h.Scalars()})
}

func showRun(w io.Writer, root, id string) error {
	r, h, err := openHistory(root, id)
	if err != nil {
		return err
	}
	m := r.Meta
	printText(w, "run       %s\nname      %s\ndir       %s\nstatus    %s\nobjective %s\npolicy    %s\nsteps     %d\ncreated   %s\n",
		m.ID, m.Name, r.Dir, r.EffectiveStatus(), m.Objective, m.Policy, m.Steps, m.Created)
	if r.Live {
		fmt.Fprintf(w, "writer    pid %d (live)\n", r.Pid)
	}
	if m.Parent != "" {
		printText(w, "forked    from %s at step %d\n", m.Parent, m.ParentStep)
	}
	if m.BLASThreads > 0 {
		printText(w, "blas      %s, %d thread(s)\n", m.BLAS, m.BLASThreads)
	}
	if len(m.Tags) > 0 {
		printText(w, "tags      %s\n", strings.Join(m.Tags, " "))
	}
	if m.Note != "" {
		for i, l := range strings.Split(m.Note, "\n") {
			head := "note      "
			if i > 0 {
				head = "          "
			}
			printText(w, "%s%s\n", head, l)
		}
	}
	printBests(w, h.Bests())
	ck, err := r.Checkpoints()
	if err == nil {
		fmt.Fprintf(w, "checkpoints %v\n", ck)
	}
	if step, _, err := r.BestCheckpoint(); err == nil {
		fmt.Fprintf(w, "best ckpt step %d (the model at the best validation ψ: export-head --best, fork --at best)\n", step)
	}
	fmt.Fprintf(w, "events    %d refreshes, %d controls, %d starts\n", len(h.Refreshes), len(h.Controls), len(h.Starts))
	for _, a := range h.Controls {
		msg := ""
		if a.Err != "" {
			msg = " (refused: " + a.Err + ")"
		}
		printText(w, "  step %6d  %s%s\n", a.Step, a.Control, msg)
	}
	for _, e := range h.Errors {
		printText(w, "error     %s\n", e.Err)
	}
	for _, wn := range h.Warnings {
		printText(w, "warning   %s\n", wn.String())
	}
	if h.Final != nil {
		fmt.Fprintln(w)
		printSummary(w, h.Final, h.SessionStart())
	}
	return nil
}

// printBests writes the best validation ψ of every objective the run
// optimized, each judged on its own objective and labelled with it; the
// latest first.
func printBests(w io.Writer, bs []record.Best) {
	for i := len(bs) - 1; i >= 0; i-- {
		b := bs[i]
		head := "best      "
		if i < len(bs)-1 {
			head = "          "
		}
		span := ""
		if len(bs) > 1 {
			span = fmt.Sprintf(", optimized from step %d to %d", b.From, b.To)
		}
		fmt.Fprintf(w, "%sψ %s %.4f at step %d (validation%s)\n", head, b.Objective, b.Psi, b.Step, span)
	}
}

func removeRuns(in io.Reader, w io.Writer, root string, ids []string, yes bool) error {
	br := bufio.NewReader(in)
	for _, id := range ids {
		r, err := openRun(root, id)
		if err != nil {
			return err
		}
		if !yes {
			printText(w, "remove run %s (%s, %s, %d steps)? [y/N] ", r.Meta.ID, r.Meta.Name, r.EffectiveStatus(), r.Meta.Steps)
			line, _ := br.ReadString('\n')
			if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
				fmt.Fprintln(w, "kept")
				continue
			}
		}
		if err := runs.Remove(root, r.Meta.ID); err != nil {
			return err
		}
		fmt.Fprintf(w, "removed %s\n", r.Meta.ID)
	}
	return nil
}

// flatConfig flattens a run's config.toml to "section.key" → value text.
func flatConfig(r *runs.Run) (map[string]string, error) {
	text, err := r.Config()
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if _, err := toml.Decode(text, &m); err != nil {
		return nil, fmt.Errorf("%s/config.toml: %w", r.Dir, err)
	}
	out := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if sub, ok := v.(map[string]any); ok {
			for k, x := range sub {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				walk(p, x)
			}
			return
		}
		out[prefix] = fmt.Sprint(v)
	}
	walk("", m)
	return out, nil
}

// grid is a table printed with every column as wide as its widest cell
// over the whole table, so a run's id stands over all of its values; a
// row of one cell is a section heading and spans the line.
type grid struct{ rows [][]string }

func (g *grid) row(cells ...string) { g.rows = append(g.rows, cells) }

// maxCell is the widest a run's column gets; longer values (paths, long
// names) lose their middle.
const maxCell = 24

func (g *grid) write(w io.Writer) error {
	var width []int
	for _, r := range g.rows {
		if len(r) < 2 {
			continue
		}
		for i, c := range r {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	// The label column is aligned left, the runs' columns right (numbers
	// line up on their decimal point).
	var b strings.Builder
	for _, r := range g.rows {
		if len(r) < 2 {
			b.WriteString(strings.Join(r, "") + "\n")
			continue
		}
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i == 0 {
				b.WriteString(c + pad)
			} else {
				b.WriteString("  " + pad + c)
			}
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// cell makes an external string fit for a column: printable
// (safetext.Line), and at most maxCell runes, the middle elided.
func cell(s string) string {
	s = safetext.Line(s)
	r := []rune(s)
	if len(r) <= maxCell {
		return s
	}
	h := (maxCell - 1) / 2
	return string(r[:h]) + "…" + string(r[len(r)-(maxCell-1-h):])
}

func num4(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.4f", v)
}

// compareRuns prints runs side by side, one column per run under its id
// and one value per cell: the config keys that differ, every reported
// metric and ψ at the last refresh and at its best over the refreshes
// (validation), and on the test set before and after fine-tuning.
func compareRuns(w io.Writer, root string, ids []string) error {
	var rs []*runs.Run
	var hs []*record.History
	var cfgs []map[string]string
	for _, id := range ids {
		r, h, err := openHistory(root, id)
		if err != nil {
			return err
		}
		c, err := flatConfig(r)
		if err != nil {
			return err
		}
		rs, hs, cfgs = append(rs, r), append(hs, h), append(cfgs, c)
	}
	var g grid
	perRun := func(label string, f func(i int) string) {
		cells := []string{label}
		for i := range rs {
			cells = append(cells, f(i))
		}
		g.row(cells...)
	}
	perRun("run", func(i int) string { return cell(rs[i].Meta.ID) })
	perRun("name", func(i int) string { return cell(rs[i].Meta.Name) })
	perRun("objective", func(i int) string { return cell(rs[i].Meta.Objective) })
	g.row("")
	g.row("config (keys that differ)")
	keys := map[string]bool{}
	for _, c := range cfgs {
		for k := range c {
			keys[k] = true
		}
	}
	ndiff := 0
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if k == "name" {
			continue // the name row above
		}
		same := true
		for _, c := range cfgs[1:] {
			same = same && c[k] == cfgs[0][k]
		}
		if same {
			continue
		}
		ndiff++
		perRun(cell(k), func(i int) string {
			if v, ok := cfgs[i][k]; ok {
				return cell(v)
			}
			return "(unset)"
		})
	}
	if ndiff == 0 {
		g.row("(none)")
	}
	// each prints every reported metric and ψ of every objective, as
	// value reads them from a report and from ψ by objective index.
	each := func(heading string, value func(i int, rep func(metric.Report) float64, obj int) float64) {
		g.row("")
		g.row(heading)
		for _, m := range reported {
			perRun(m.name, func(i int) string { return num4(value(i, m.get, -1)) })
		}
		for k, o := range metric.Objectives() {
			perRun("ψ "+string(o), func(i int) string { return num4(value(i, nil, k)) })
		}
	}
	// stat is a statistic of one metric over a run's refreshes.
	stat := func(pick func(vals []float64) float64) func(int, func(metric.Report) float64, int) float64 {
		return func(i int, rep func(metric.Report) float64, obj int) float64 {
			vals := make([]float64, 0, len(hs[i].Refreshes))
			for _, r := range hs[i].Refreshes {
				switch {
				case rep != nil:
					vals = append(vals, rep(r.Stats.Report))
				case obj < len(r.Stats.Objectives):
					vals = append(vals, r.Stats.Objectives[obj])
				}
			}
			if len(vals) == 0 {
				return math.NaN()
			}
			return pick(vals)
		}
	}
	each("validation, last refresh", stat(func(v []float64) float64 { return v[len(v)-1] }))
	each("validation, best over refreshes", stat(func(v []float64) float64 { return slices.Max(v) }))
	test := func(after bool) func(int, func(metric.Report) float64, int) float64 {
		return func(i int, rep func(metric.Report) float64, obj int) float64 {
			f := hs[i].Final
			if f == nil {
				return math.NaN()
			}
			r, objs := f.TestBefore, f.TestObjBefore
			if after {
				r, objs = f.TestAfter, f.TestObjAfter
			}
			switch {
			case rep != nil:
				return rep(r)
			case obj < len(objs):
				return objs[obj]
			}
			return math.NaN()
		}
	}
	each("test, before fine-tuning", test(false))
	each("test, after fine-tuning", test(true))
	g.row("")
	g.row("- : not recorded (a run that has not finished has no test values)")
	return g.write(w)
}

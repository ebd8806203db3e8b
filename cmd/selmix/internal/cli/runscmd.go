package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"

	"selmix/core/metric"
	"selmix/runs"
	"selmix/runs/record"
)

// reported are the metrics every run reports, in table order.
var reported = []struct {
	name string
	get  func(metric.Report) float64
}{
	{"mean recall", func(r metric.Report) float64 { return r.MeanRecall }},
	{"min recall", func(r metric.Report) float64 { return r.MinRecall }},
	{"H-mean", func(r metric.Report) float64 { return r.HMean }},
	{"G-mean", func(r metric.Report) float64 { return r.GMean }},
	{"min coverage", func(r metric.Report) float64 { return r.MinCoverage }},
	{"min head/tail recall", func(r metric.Report) float64 { return r.MinHTRecall }},
	{"min head/tail coverage", func(r metric.Report) float64 { return r.MinHTCoverage }},
	{"accuracy", func(r metric.Report) float64 { return r.Accuracy }},
}

func newRunsCmd() *cobra.Command {
	var root string
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List, show, compare and remove recorded runs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return listRuns(cmd.OutOrStdout(), runs.Root(root), nil)
		},
	}
	cmd.PersistentFlags().StringVar(&root, "runs", "", "runs root `DIR` (default $SELMIX_RUNS, else ./runs)")
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
		Short: "Side by side: the config keys that differ, and final/best/min/max of every metric",
		Long: `compare prints runs side by side: the config keys that differ, and for every
metric its final, best, min and max over the refreshes (validation) and
its value before and after fine-tuning (test). --json prints the same as
one JSON object, --csv as one CSV table with a column per run
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

func listRuns(w io.Writer, root string, tags []string) error {
	all, err := runs.List(root)
	if err != nil {
		return err
	}
	if len(all) == 0 {
		fmt.Fprintf(w, "no runs in %s\n", root)
		return nil
	}
	if all = filterTagged(all, tags); len(all) == 0 {
		fmt.Fprintf(w, "no run in %s is tagged %s\n", root, cleanLine(strings.Join(tags, " and "), 0))
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tOBJECTIVE\tPOLICY\tSTATUS\tSTEPS\tBEST (STEP)\tSTARTED\tTAGS")
	for _, r := range all {
		m := r.Meta
		best := "-"
		if !r.Broken() && m.BestStep >= 0 {
			best = fmt.Sprintf("%.4f (%d)", m.Best, m.BestStep)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", filepath.Base(r.Dir), m.Name, m.Objective, m.Policy,
			r.EffectiveStatus(), m.Steps, best, strings.Replace(m.Created, "T", " ", 1), tagsColumn(m))
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
		j.Best, j.BestStep = &best, &step
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
	fmt.Fprintf(w, "run       %s\nname      %s\ndir       %s\nstatus    %s\nobjective %s\npolicy    %s\nsteps     %d\ncreated   %s\n",
		m.ID, m.Name, r.Dir, r.EffectiveStatus(), m.Objective, m.Policy, m.Steps, m.Created)
	if r.Live {
		fmt.Fprintf(w, "writer    pid %d (live)\n", r.Pid)
	}
	if m.Parent != "" {
		fmt.Fprintf(w, "forked    from %s at step %d\n", m.Parent, m.ParentStep)
	}
	if len(m.Tags) > 0 {
		fmt.Fprintf(w, "tags      %s\n", cleanLine(strings.Join(m.Tags, " "), 0))
	}
	if m.Note != "" {
		for i, l := range cleanLines(m.Note) {
			head := "note      "
			if i > 0 {
				head = "          "
			}
			fmt.Fprintf(w, "%s%s\n", head, l)
		}
	}
	if m.BestStep >= 0 && len(h.Refreshes) > 0 {
		fmt.Fprintf(w, "best      %s %.4f at step %d (validation)\n", m.Objective, m.Best, m.BestStep)
	}
	ck, err := r.Checkpoints()
	if err == nil {
		fmt.Fprintf(w, "checkpoints %v\n", ck)
	}
	fmt.Fprintf(w, "events    %d refreshes, %d controls, %d starts\n", len(h.Refreshes), len(h.Controls), len(h.Starts))
	for _, a := range h.Controls {
		msg := ""
		if a.Err != "" {
			msg = " (refused: " + a.Err + ")"
		}
		fmt.Fprintf(w, "  step %6d  %s%s\n", a.Step, a.Control, msg)
	}
	for _, e := range h.Errors {
		fmt.Fprintf(w, "error     %s\n", e.Err)
	}
	for _, wn := range h.Warnings {
		fmt.Fprintf(w, "warning   %s\n", wn)
	}
	if h.Final != nil {
		fmt.Fprintln(w)
		printSummary(w, h.Final)
	}
	return nil
}

func removeRuns(in io.Reader, w io.Writer, root string, ids []string, yes bool) error {
	br := bufio.NewReader(in)
	for _, id := range ids {
		r, err := openRun(root, id)
		if err != nil {
			return err
		}
		if !yes {
			fmt.Fprintf(w, "remove run %s (%s, %s, %d steps)? [y/N] ", r.Meta.ID, r.Meta.Name, r.EffectiveStatus(), r.Meta.Steps)
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

// series is one metric over a run's refreshes (validation).
type series struct{ final, best, min, max float64 }

func summarize(vals []float64) series {
	s := series{math.NaN(), math.NaN(), math.Inf(1), math.Inf(-1)}
	for _, v := range vals {
		s.min, s.max = math.Min(s.min, v), math.Max(s.max, v)
	}
	if n := len(vals); n > 0 {
		s.final, s.best = vals[n-1], s.max
	} else {
		s.min, s.max = math.NaN(), math.NaN()
	}
	return s
}

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
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "run")
	for _, r := range rs {
		fmt.Fprintf(tw, "\t%s", r.Meta.ID)
	}
	fmt.Fprint(tw, "\n")
	fmt.Fprint(tw, "name")
	for _, r := range rs {
		fmt.Fprintf(tw, "\t%s", r.Meta.Name)
	}
	fmt.Fprint(tw, "\n\nconfig (keys that differ)\n")
	keys := map[string]bool{}
	for _, c := range cfgs {
		for k := range c {
			keys[k] = true
		}
	}
	var sorted []string
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	ndiff := 0
	for _, k := range sorted {
		same := true
		for _, c := range cfgs[1:] {
			if c[k] != cfgs[0][k] {
				same = false
			}
		}
		if same {
			continue
		}
		ndiff++
		fmt.Fprint(tw, k)
		for _, c := range cfgs {
			v, ok := c[k]
			if !ok {
				v = "(unset)"
			}
			fmt.Fprintf(tw, "\t%s", v)
		}
		fmt.Fprint(tw, "\n")
	}
	if ndiff == 0 {
		fmt.Fprint(tw, "(none)\n")
	}
	fmt.Fprint(tw, "\nvalidation metric: final / best / min / max over refreshes\n")
	row := func(name string, get func(record.Refresh) float64) {
		fmt.Fprint(tw, name)
		for _, h := range hs {
			vals := make([]float64, len(h.Refreshes))
			for i, r := range h.Refreshes {
				vals[i] = get(r)
			}
			s := summarize(vals)
			fmt.Fprintf(tw, "\t%.4f / %.4f / %.4f / %.4f", s.final, s.best, s.min, s.max)
		}
		fmt.Fprint(tw, "\n")
	}
	for _, m := range reported {
		row(m.name, func(r record.Refresh) float64 { return m.get(r.Stats.Report) })
	}
	for i, o := range metric.Objectives() {
		row("ψ "+string(o), func(r record.Refresh) float64 {
			if i < len(r.Stats.Objectives) {
				return r.Stats.Objectives[i]
			}
			return math.NaN()
		})
	}
	fmt.Fprint(tw, "\ntest metric: before → after\n")
	for _, m := range reported {
		fmt.Fprint(tw, m.name)
		for _, h := range hs {
			if h.Final == nil {
				fmt.Fprint(tw, "\t(not finished)")
				continue
			}
			fmt.Fprintf(tw, "\t%.4f → %.4f", m.get(h.Final.TestBefore), m.get(h.Final.TestAfter))
		}
		fmt.Fprint(tw, "\n")
	}
	return tw.Flush()
}

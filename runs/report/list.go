package report

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"selmix/core/gpu"
	"selmix/core/metric"
	"selmix/internal/safetext"
	"selmix/runs"
	"selmix/runs/record"
)

// List writes the table of runs ls: every run of root carrying every one
// of tags, one row each, or a line saying there is none. A best
// validation ψ aimed at α/K + δ (record.BestAimed) reads "aimed 0.0372
// (1970)", ψ aimed, and a line under the table says what that is.
func List(w io.Writer, root string, tags []string) error {
	all, err := runs.List(root)
	if err != nil {
		return err
	}
	if len(all) == 0 {
		safetext.Fprintf(w, "no runs in %s\n", root)
		return nil
	}
	if all = runs.Tagged(all, tags); len(all) == 0 {
		fmt.Fprintf(w, "no run in %s is tagged %s\n", root, safetext.Line(strings.Join(tags, " and ")))
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tOBJECTIVE\tPOLICY\tSTATUS\tSTEPS\tBEST VAL ψ (STEP)\tTEST ψ END\tTEST ψ AT BEST\tSTARTED\tTAGS")
	aimed := false
	for _, r := range all {
		m := r.Meta
		best := "-"
		if !r.Broken() && m.BestStep >= 0 {
			best = fmt.Sprintf("%.4f (%d)", m.Best, m.BestStep)
			if m.BestObjective != "" && m.BestObjective != m.Objective {
				best = m.BestObjective + " " + best
			}
			// ψ aimed at α/K + δ is not the test columns' ψ: labelled.
			if record.BestAimed(&r) {
				best, aimed = "aimed "+best, true
			}
		}
		end, atBest := TestPsi(&r)
		safetext.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", filepath.Base(r.Dir), m.Name, m.Objective, m.Policy,
			r.EffectiveStatus(), m.Steps, best, end, atBest, strings.Replace(m.Created, "T", " ", 1), TagsColumn(m))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if aimed {
		fmt.Fprintln(w, AimedNote)
	}
	return nil
}

// Live writes the table of ps: every live run of root and every crashed
// one (a process that ended without recording how), or a line saying
// there is none. Its GPUS column names the GPUs each run's worker said
// it uses and, for live runs, their utilisation and memory now as stats
// gives them (nvidia-smi: the whole GPU's), asked once if some live run
// has GPUs; stats nil or failing leaves the figures out.
func Live(w io.Writer, root string, stats func() ([]gpu.Stat, error)) error {
	rs, err := runs.List(root)
	if err != nil {
		return err
	}
	var st []gpu.Stat
	if stats != nil && slices.ContainsFunc(rs, func(r runs.Run) bool { return r.Live && len(r.Meta.GPUs) > 0 }) {
		st, _ = stats()
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PID\tRUN\tNAME\tSTEP\tSTATE\tGPUS")
	n := 0
	for _, r := range rs {
		status := r.EffectiveStatus()
		if !r.Live && status != runs.StatusCrashed {
			continue
		}
		pid := "-"
		var now []gpu.Stat
		if r.Live {
			pid = fmt.Sprint(r.Pid)
			now = st
		}
		safetext.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", pid, r.Meta.ID, r.Meta.Name, r.Meta.Steps, status, GPUsColumn(r.Meta, now))
		n++
	}
	if n == 0 {
		fmt.Fprintf(w, "no live or crashed runs in %s\n", root)
		return nil
	}
	return tw.Flush()
}

// GPUsColumn is a run's GPUs as ps shows them: "3 93% 41/80 GiB, 5 90%
// 40/80 GiB" with the figures of stats (matched by index or UUID), the ids
// alone without, "-" for none; with its ranks when more than one.
func GPUsColumn(m runs.Meta, stats []gpu.Stat) string {
	if len(m.GPUs) == 0 {
		return "-"
	}
	parts := make([]string, len(m.GPUs))
	for i, id := range m.GPUs {
		parts[i] = safetext.Cut(id, 40)
		if s, ok := gpu.Find(stats, id); ok {
			if s.Util > 0 {
				parts[i] += fmt.Sprintf(" %.0f%%", 100*s.Util)
			}
			if s.MemTotal > 0 {
				parts[i] += " " + gib(s.MemUsed) + "/" + gib(s.MemTotal) + " GiB"
			}
		}
	}
	out := strings.Join(parts, ", ")
	if m.WorldSize > 1 {
		out += fmt.Sprintf(" (%d ranks)", m.WorldSize)
	}
	return out
}

// gib is n bytes in GiB: whole from 10 on.
func gib(n int64) string {
	g := float64(n) / (1 << 30)
	if g >= 10 {
		return fmt.Sprintf("%.0f", g)
	}
	return fmt.Sprintf("%.1f", g)
}

// TagsColumn is a run's tags as runs ls shows them: comma-separated, at
// most 40 runes, "-" for none.
func TagsColumn(m runs.Meta) string {
	if len(m.Tags) == 0 {
		return "-"
	}
	return safetext.Cut(strings.Join(m.Tags, ","), 40)
}

// TestPsi is the test ψ of r's optimized objective at its end (or where
// it stopped) and at its best checkpoint, from summary.json, each
// labelled with its objective where it is not the OBJECTIVE column's;
// "-" where the run has none (not yet ended, or written before selmix
// kept the best model).
func TestPsi(r *runs.Run) (end, atBest string) {
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
		v := At(vals, i)
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

// At formats v[i] with four decimals, or "-" where v has no such value.
func At(v []float64, i int) string {
	if i < 0 || i >= len(v) {
		return "-"
	}
	return fmt.Sprintf("%.4f", v[i])
}

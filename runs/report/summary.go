package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/runs/record"
)

// metRow heads the row of the classes at coverage ≥ α/K.
const metRow = "coverage ≥ α/K met"

// AimedNote says what "ψ aimed" is where a best or a value is labelled so
// (loop.PsiLabel): with a coverage margin the ψ fine-tuning optimizes,
// and judges its best checkpoint on, aims at α/K + δ, while every other ψ
// shown (the test columns, ψ of each objective) keeps α/K.
const AimedNote = "ψ aimed: ψ with the coverage bound α/K raised by the margin δ (finetune.cov_margin), what fine-tuning optimizes and the best checkpoint is judged on; every other ψ keeps α/K"

// tableCell is metric m of r in the summary table: 4 decimals, and for a
// coverage, which the constraint line below compares with α/K, more where
// 4 would put it on the other side of the bound (metric.CoverageText).
func tableCell(m metric.Scalar, r *metric.Report, alpha float64) string {
	if m.Unit == "coverage" {
		return metric.CoverageText(m.Get(r), bound(alpha, r.K), 4)
	}
	return fmt.Sprintf("%.4f", m.Get(r))
}

// Summary writes s, the summary of a session that began at step from (0
// for a run's first; a resume's checkpoint step otherwise), as the
// before/after table of every reported metric (metric.Scalars, by its
// Key) and ψ of every objective
// (and at the best checkpoint when s has one); the steps and seconds it
// reports are that session's.
func Summary(w io.Writer, s *loop.Summary, from int) {
	if s == nil {
		return
	}
	b := s.Best
	if why := loop.CannotLearn(s.ValBefore, nil); why != "" {
		fmt.Fprintf(w, "warning: %s\n", why)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if b != nil {
		fmt.Fprintf(tw, "metric\tval before\tval after\tval at best\ttest before\ttest after\ttest at best\t\n")
		for _, m := range metric.Scalars() {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", m.Key, tableCell(m, &s.ValBefore, s.Alpha), tableCell(m, &s.ValAfter, s.Alpha), tableCell(m, &b.Val, s.Alpha),
				tableCell(m, &s.TestBefore, s.Alpha), tableCell(m, &s.TestAfter, s.Alpha), tableCell(m, &b.Test, s.Alpha))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", metRow, met(s.ValBefore, s.Alpha), met(s.ValAfter, s.Alpha), met(b.Val, s.Alpha),
			met(s.TestBefore, s.Alpha), met(s.TestAfter, s.Alpha), met(b.Test, s.Alpha))
	} else {
		fmt.Fprintf(tw, "metric\tval before\tval after\ttest before\ttest after\t\n")
		for _, m := range metric.Scalars() {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", m.Key, tableCell(m, &s.ValBefore, s.Alpha), tableCell(m, &s.ValAfter, s.Alpha), tableCell(m, &s.TestBefore, s.Alpha), tableCell(m, &s.TestAfter, s.Alpha))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", metRow, met(s.ValBefore, s.Alpha), met(s.ValAfter, s.Alpha), met(s.TestBefore, s.Alpha), met(s.TestAfter, s.Alpha))
	}
	for i, o := range metric.Objectives() {
		label, mark := record.ObjectiveSeries(o).Label, ""
		if o == s.Objective {
			mark = " *"
		}
		if b != nil && b.Objective == o && b.Objective != s.Objective {
			mark = " †"
		}
		if b != nil {
			fmt.Fprintf(tw, "%s%s\t\t\t\t%.4f\t%.4f\t%s\t\n", label, mark, s.TestObjBefore[i], s.TestObjAfter[i], At(b.TestObj, i))
			continue
		}
		fmt.Fprintf(tw, "%s%s\t\t\t%.4f\t%.4f\t\n", label, mark, s.TestObjBefore[i], s.TestObjAfter[i])
	}
	tw.Flush()
	Plugin(w, s)
	Constraint(w, s)
	if b != nil {
		fmt.Fprintf(w, "best: %s %s %.4f on validation at step %d (the best checkpoint: export-head --best, fork --at best)\n", loop.PsiLabel(b.Aimed), b.Objective, b.Psi, b.Step)
		if b.Aimed {
			fmt.Fprintln(w, AimedNote)
		}
		if b.Objective != s.Objective {
			fmt.Fprintf(w, "† the objective optimized when the best was taken (the objective changed; a new best is judged on the new one)\n")
		}
	}
	if from > 0 {
		fmt.Fprintf(w, "* optimized objective; %d fine-tuning steps in this session (steps %d to %d) in %.1fs\n", s.Steps-from, from, s.Steps, s.Seconds)
		return
	}
	fmt.Fprintf(w, "* optimized objective; %d fine-tuning steps in %.1fs\n", s.Steps, s.Seconds)
}

// Plugin writes the post-hoc plug-in classifier's test results beside the
// run's own: on the pre-trained model (the baseline alone) and on the
// model at the end (after SelMix), for the objective its biases were
// chosen for.
func Plugin(w io.Writer, s *loop.Summary) {
	for _, p := range []struct {
		what string
		pl   *loop.Plugin
		own  []float64
	}{{"pre-trained + plug-in", s.PluginBefore, s.TestObjBefore}, {"fine-tuned + plug-in", s.PluginAfter, s.TestObjAfter}} {
		if p.pl == nil {
			continue
		}
		o := p.pl.Objective
		fmt.Fprintf(w, "%s (logit biases chosen on validation for %s): test ψ %s %.4f (without: %.4f), mean recall %.4f, min recall %.4f, min coverage %.4f\n",
			p.what, o, o, o.In(p.pl.TestObj), o.In(p.own), p.pl.Test.MeanRecall, p.pl.Test.MinRecall, p.pl.Test.MinCoverage)
	}
}

package bench

import (
	"cmp"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat"

	"selmix/core/metric"
	"selmix/core/safetext"
	"selmix/core/train"
	"selmix/runs"
	"selmix/runs/record"
	"selmix/runs/sweep"
	"selmix/viz"
)

// The paper-reproduction suite is the sweep spec paper.toml; `selmix
// bench paper` runs it like any sweep and writes its report, the paper's
// tables, from the member runs.

//go:embed paper.toml
var paperSpec []byte

// PaperSpecFile names the spec in errors and in the report.
const PaperSpecFile = "bench/paper.toml"

// PaperOptions change the shipped spec for one invocation.
type PaperOptions struct {
	Seeds, Steps, Epochs int      // 0 = the spec's
	DataDir              string   // "" = the spec's (the default data.dir)
	Cache                string   // pretrain.cache; "" = the spec's
	Semi                 bool     // keep the semi-supervised rows
	Sets                 []string // extra key=value on every member
}

// PaperSpec is the suite's spec with o applied, and its text as the sweep
// folder records it: the shipped spec under a comment that names the
// overrides (sweep.json lists every member's --set).
func PaperSpec(o PaperOptions) (*sweep.Spec, []byte, error) {
	spec, err := sweep.Parse(paperSpec, PaperSpecFile)
	if err != nil {
		return nil, nil, err
	}
	var notes []string
	set := func(key, value string) {
		notes = append(notes, key+"="+value)
		for i := range spec.Base {
			if spec.Base[i].Key == key {
				spec.Base[i].Value = value
				return
			}
		}
		spec.Base = append(spec.Base, sweep.Setting{Key: key, Value: value})
	}
	if o.Steps > 0 {
		set("finetune.steps", strconv.Itoa(o.Steps))
	}
	if o.Epochs > 0 {
		set("pretrain.epochs", strconv.Itoa(o.Epochs))
	}
	if o.DataDir != "" {
		set("data.dir", strconv.Quote(o.DataDir))
	}
	if o.Cache != "" {
		set("pretrain.cache", strconv.Quote(o.Cache))
	}
	for _, kv := range o.Sets {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, nil, fmt.Errorf("--set %s: want section.key=value", kv)
		}
		set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	if o.Seeds > 0 {
		i := slices.IndexFunc(spec.Axes, func(a sweep.Axis) bool { return a.Key == sweep.SeedKey })
		if i < 0 {
			return nil, nil, fmt.Errorf("%s: no seed axis", PaperSpecFile)
		}
		spec.Axes[i].Values = nil
		for s := 1; s <= o.Seeds; s++ {
			spec.Axes[i].Values = append(spec.Axes[i].Values, strconv.Itoa(s))
		}
		notes = append(notes, fmt.Sprintf("seed=1..%d", o.Seeds))
	}
	if !o.Semi {
		spec.Rows = slices.DeleteFunc(spec.Rows, func(r sweep.Row) bool { return rowTable(rowValues(r)) == "semi" })
		notes = append(notes, "no semi-supervised rows")
	}
	text := paperSpec
	if len(notes) > 0 {
		text = append([]byte("# selmix bench paper changed this spec: "+strings.Join(notes, ", ")+"\n"), paperSpec...)
	}
	return spec, text, nil
}

func rowValues(r sweep.Row) map[string]string {
	m := map[string]string{}
	for _, s := range r {
		m[s.Key] = sweep.Display(s.Value)
	}
	return m
}

// rowTable sorts a row of the suite into a table of the report by the
// keys it sets (paper.toml says how).
func rowTable(v map[string]string) string {
	switch {
	case v["data.unlabeled"] != "":
		return "semi"
	case v["pretrain.loss"] != "":
		return "scratch"
	case v["finetune.form"] != "":
		return "form"
	case v["finetune.policy"] != "" && v["finetune.policy"] != "selmix":
		return "policies"
	case v["finetune.refresh"] != "" || v["finetune.adapt"] != "":
		return "adapt"
	}
	return "objectives"
}

// rowLabel names a row within its table.
func rowLabel(table string, v map[string]string) string {
	o := v["finetune.objective"]
	switch table {
	case "semi":
		return o + "/oracle=" + cmp.Or(v["finetune.oracle_labels"], "false")
	case "scratch":
		return o + "/" + v["pretrain.loss"]
	case "form":
		return o + "/" + v["finetune.form"]
	case "policies":
		return o + "/" + v["finetune.policy"]
	case "adapt":
		if a := v["finetune.adapt"]; a != "" && a != "none" {
			return o + "/adapt " + a
		}
		return o + "/refresh " + v["finetune.refresh"]
	}
	return o
}

// paperResult is one finished member.
type paperResult struct {
	table, label string
	seed         string
	run, root    string
	sum          *train.Summary
	minValMean   float64 // lowest validation mean recall over its refreshes
	sets         []string
}

// PaperReport is the suite's report, as Markdown, from the finished
// members of one or more sweeps of the spec (a later sweep may add rows):
// the paper's tables (mean ± sample std over seeds), checks of its
// claims, the comparison figures (written under figDir, linked as figRel)
// and every run's configuration. command is how the suite was run, for
// the report's first line.
func PaperReport(ss []*sweep.Sweep, command, figDir, figRel string) (string, error) {
	var rs []paperResult
	var missing, ids []string
	members := 0
	for _, s := range ss {
		ids = append(ids, "`"+s.ID+"`")
		members += len(s.Members)
		r, m, err := sweepResults(s)
		if err != nil {
			return "", err
		}
		rs, missing = append(rs, r...), append(missing, m...)
	}
	if len(rs) == 0 {
		return "", fmt.Errorf("sweep %s: no member has finished", strings.Join(ids, ", "))
	}
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	cfg, err := ss[0].Config(0)
	if err != nil {
		return "", err
	}
	seeds := map[string]bool{}
	wall := 0.0
	for _, r := range rs {
		seeds[r.seed] = true
		wall += r.sum.Seconds
	}
	p("# SelMix on Fashion-MNIST-LT: reproducing the paper's pattern\n\n")
	p("Generated by `%s` from sweep %s (%s, %d of %d members finished; %.1f min of fine-tuning in all).\n",
		command, strings.Join(ids, ", "), PaperSpecFile, len(rs), members, wall/60)
	p("Supervised rows: Fashion-MNIST-LT, ρ = %g, N₁ = %d, %d validation images per class, the full official test set, MLP 784→%s, pre-trained with %s for %d epochs, then %d fine-tuning steps (B = %d, η = %g, refresh %d unless the row says otherwise). Metrics are on the test set, mean ± sample std over %d seed(s). Every row is a run of the sweep; `selmix sweep open %s` lists them.\n\n",
		cfg.Data.Rho, cfg.Data.N1, cfg.Data.ValPerClass, strings.Trim(strings.ReplaceAll(fmt.Sprint(cfg.Model.Hidden), " ", "→"), "[]"), cfg.Pretrain.Loss, cfg.Pretrain.Epochs, cfg.Finetune.Steps,
		cfg.Finetune.Batch, cfg.Finetune.LR, cfg.Finetune.Refresh, len(seeds), ss[0].ID)
	if len(missing) > 0 {
		p("**Not finished, left out**: %s.\n\n", strings.Join(missing, "; "))
	}
	header := func(first string) {
		p("| %s |", first)
		for _, c := range paperColumns {
			p(" %s |", c.name)
		}
		p("\n|---|%s\n", strings.Repeat("---|", len(paperColumns)))
	}
	p("## Optimized on × observed (paper Table \"full_metric_runs\")\n\n")
	header("optimized on")
	objectives := labels(rs, "objectives")
	if len(objectives) > 0 {
		p("| pre-trained (%s) |", cfg.Pretrain.Loss)
		for _, c := range paperColumns {
			p(" %s |", sweep.MeanStd(collect(rs, "objectives", objectives[0], c.before)))
		}
		p("\n")
	}
	for _, o := range objectives {
		p("| %s |", o)
		for _, c := range paperColumns {
			p(" %s |", sweep.MeanStd(collect(rs, "objectives", o, c.after)))
		}
		p("\n")
	}
	policyMeans := policyTable(p, rs)
	if scratch := labels(rs, "scratch"); len(scratch) > 0 {
		p("\n## From scratch\n\nPre-trained with the row's `pretrain.loss` for the objective (csst: each epoch, CSST's consistent loss for its linearisation at the validation C), not fine-tuned: the model's test metrics, beside SelMix's from the LA-CE start.\n\n| row | ψ optimized | mean rec | min rec | SelMix ψ |\n|---|---|---|---|---|\n")
		for _, l := range scratch {
			o, _, _ := strings.Cut(l, "/")
			p("| %s | %s | %s | %s | %s |\n", l, sweep.MeanStd(collect(rs, "scratch", l, optimizedBefore)),
				sweep.MeanStd(collect(rs, "scratch", l, paperColumns[0].before)), sweep.MeanStd(collect(rs, "scratch", l, paperColumns[1].before)),
				sweep.MeanStd(collect(rs, "objectives", o, optimized)))
		}
	}
	if form := labels(rs, "form"); len(form) > 0 {
		p("\n## Gain form\n\n| row | ψ optimized | mean rec |\n|---|---|---|\n")
		for _, l := range form {
			o, _, _ := strings.Cut(l, "/")
			p("| %s (paper's form) | %s | %s |\n", o, sweep.MeanStd(collect(rs, "objectives", o, optimized)), sweep.MeanStd(collect(rs, "objectives", o, meanRecall)))
			p("| %s | %s | %s |\n", l, sweep.MeanStd(collect(rs, "form", l, optimized)), sweep.MeanStd(collect(rs, "form", l, meanRecall)))
		}
	}
	adaptTable(p, rs)
	if semi := labels(rs, "semi"); len(semi) > 0 {
		p("\n## Semi-supervised (ρ_l = ρ_u = 100, matched; N₁ = 1500, M₁ = 3000; FixMatch + LA pre-training; B = 64, η = 3e-4)\n\n")
		p("| x2 drawn by | ψ before | after | mean rec after |\n|---|---|---|---|\n")
		for _, l := range semi {
			name := "pseudo-labels"
			if strings.HasSuffix(l, "=true") {
				name = "oracle labels"
			}
			p("| %s | %s | %s | %s |\n", name, sweep.MeanStd(collect(rs, "semi", l, optimizedBefore)),
				sweep.MeanStd(collect(rs, "semi", l, optimized)), sweep.MeanStd(collect(rs, "semi", l, meanRecall)))
		}
	}
	claims(p, rs, objectives, policyMeans)
	figs, ferr := paperFigures(rs, figDir, figRel)
	b.WriteString(figs)
	p("\n## Runs\n\nEach row's configuration (`selmix run --headless --set KEY=VALUE ...`):\n\n")
	p("| row | seed | run | fine-tuning s | --set |\n|---|---|---|---|---|\n")
	for _, r := range rs {
		p("| %s | %s | `%s` | %.1f | `%s` |\n", r.label, r.seed, r.run, r.sum.Seconds, strings.ReplaceAll(strings.Join(r.sets, " "), "|", "\\|"))
	}
	return b.String(), ferr
}

// sweepResults reads the finished members of s, and names the others.
func sweepResults(s *sweep.Sweep) (rs []paperResult, missing []string, err error) {
	seedCol := slices.Index(s.Columns, sweep.SeedKey)
	for i, m := range s.Members {
		v := map[string]string{}
		for c, k := range s.Columns {
			if c != seedCol && m.Vary[c] != "" {
				v[k] = sweep.Display(m.Vary[c])
			}
		}
		r, err := s.Run(i)
		if err != nil || r == nil {
			missing = append(missing, s.ID+" "+s.Describe(i))
			continue
		}
		h, err := record.Load(r)
		if err != nil || h.Final == nil {
			missing = append(missing, s.ID+" "+s.Describe(i))
			continue
		}
		low := math.Inf(1)
		for _, rf := range h.Refreshes {
			low = math.Min(low, rf.Stats.Report.MeanRecall)
		}
		t := rowTable(v)
		res := paperResult{table: t, label: rowLabel(t, v), run: r.Meta.ID, root: s.Root, sum: h.Final, minValMean: low, sets: m.Sets}
		if seedCol >= 0 {
			res.seed = m.Vary[seedCol]
		}
		rs = append(rs, res)
	}
	return rs, missing, nil
}

// labels lists the labels of a table's rows in the order they ran.
func labels(rs []paperResult, table string) []string {
	var out []string
	for _, r := range rs {
		if r.table == table && !slices.Contains(out, r.label) {
			out = append(out, r.label)
		}
	}
	return out
}

// splitLabels splits a table's "objective/variant" labels into the
// objectives and the variants, each in order of first appearance.
func splitLabels(rs []paperResult, table string) (objs, variants []string) {
	for _, l := range labels(rs, table) {
		o, v, _ := strings.Cut(l, "/")
		if !slices.Contains(objs, o) {
			objs = append(objs, o)
		}
		if !slices.Contains(variants, v) {
			variants = append(variants, v)
		}
	}
	return objs, variants
}

// A value of a member's summary.
type value func(r paperResult) float64

func objValue(vals []float64, o metric.Objective) float64 {
	if i := slices.Index(metric.Objectives(), o); i >= 0 && i < len(vals) {
		return vals[i]
	}
	return math.NaN()
}

var (
	optimized       value = func(r paperResult) float64 { return objValue(r.sum.TestObjAfter, r.sum.Objective) }
	optimizedBefore value = func(r paperResult) float64 { return objValue(r.sum.TestObjBefore, r.sum.Objective) }
	meanRecall      value = func(r paperResult) float64 { return r.sum.TestAfter.MeanRecall }
	seconds         value = func(r paperResult) float64 { return r.sum.Seconds }
	lowestValMean   value = func(r paperResult) float64 { return r.minValMean }
)

// column is one observed quantity, after fine-tuning and before it (the
// pre-trained model).
type column struct {
	name          string
	after, before value
}

func reportCol(name string, f func(metric.Report) float64) column {
	return column{name,
		func(r paperResult) float64 { return f(r.sum.TestAfter) },
		func(r paperResult) float64 { return f(r.sum.TestBefore) }}
}

func objCol(o metric.Objective) column {
	return column{"ψ " + string(o),
		func(r paperResult) float64 { return objValue(r.sum.TestObjAfter, o) },
		func(r paperResult) float64 { return objValue(r.sum.TestObjBefore, o) }}
}

var paperColumns = []column{
	reportCol("mean rec", func(r metric.Report) float64 { return r.MeanRecall }),
	reportCol("min rec", func(r metric.Report) float64 { return r.MinRecall }),
	reportCol("H-mean", func(r metric.Report) float64 { return r.HMean }),
	reportCol("G-mean", func(r metric.Report) float64 { return r.GMean }),
	reportCol("min cov", func(r metric.Report) float64 { return r.MinCoverage }),
	objCol(metric.MeanRecallCov),
	objCol(metric.HMeanCov),
}

// collect gathers v over the seeds of one row.
func collect(rs []paperResult, table, label string, v value) []float64 {
	var xs []float64
	for _, r := range rs {
		if r.table == table && r.label == label {
			xs = append(xs, v(r))
		}
	}
	return xs
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return stat.Mean(xs, nil)
}

// policyTable writes the policy comparison (SelMix's own row is the
// objectives table's) and returns each objective's policy means.
func policyTable(p func(string, ...any), rs []paperResult) map[string]map[string]float64 {
	objs, pols := splitLabels(rs, "policies")
	if len(objs) == 0 {
		return nil
	}
	pols = append([]string{"selmix"}, pols...)
	p("\n## Policy comparison at the same budget (paper Table \"policy-comparison\")\n\n")
	p("Each cell: the optimized objective on test after fine-tuning.\n\n| objective | %s |\n|---|%s\n", strings.Join(pols, " | "), strings.Repeat("---|", len(pols)))
	means := map[string]map[string]float64{}
	for _, o := range objs {
		means[o] = map[string]float64{}
		p("| %s |", o)
		for _, pol := range pols {
			xs := collect(rs, "policies", o+"/"+pol, optimized)
			if pol == "selmix" {
				xs = collect(rs, "objectives", o, optimized)
			}
			if len(xs) > 0 {
				means[o][pol] = mean(xs)
			}
			p(" %s |", sweep.MeanStd(xs))
		}
		p("\n")
	}
	return means
}

// adaptTable writes the linear-step study: per objective, the paper's
// refresh interval against the rows that change it.
func adaptTable(p func(string, ...any), rs []paperResult) {
	objs, variants := splitLabels(rs, "adapt")
	if len(objs) == 0 {
		return
	}
	p("\n## Is the linear step valid? Refresh interval and finetune.adapt\n\n")
	p("Each cell: test ψ of the optimized objective, then the lowest validation mean recall seen at a refresh, and the fine-tuning wall time (s), mean over seeds.\n\n")
	p("| objective | refresh 50 (paper) | %s |\n|---|%s\n", strings.Join(variants, " | "), strings.Repeat("---|", len(variants)+1))
	cell := func(table, label string) string {
		xs := collect(rs, table, label, optimized)
		if len(xs) == 0 {
			return "–"
		}
		return fmt.Sprintf("%s; low %.3f; %.0f s", sweep.MeanStd(xs), mean(collect(rs, table, label, lowestValMean)), mean(collect(rs, table, label, seconds)))
	}
	for _, o := range objs {
		p("| %s | %s |", o, cell("objectives", o))
		for _, v := range variants {
			p(" %s |", cell("adapt", o+"/"+v))
		}
		p("\n")
	}
}

// claims checks the paper's claims on the means.
func claims(p func(string, ...any), rs []paperResult, objectives []string, policyMeans map[string]map[string]float64) {
	p("\n## Do the paper's claims hold here?\n\n")
	var improved, not []string
	for _, o := range objectives {
		oc := objCol(metric.Objective(o))
		before, after := mean(collect(rs, "objectives", o, oc.before)), mean(collect(rs, "objectives", o, oc.after))
		s := fmt.Sprintf("%s %.4f → %.4f", o, before, after)
		if after > before {
			improved = append(improved, s)
		} else {
			not = append(not, s)
		}
	}
	p("1. **SelMix improves the optimized objective over the pre-trained model** for %d of %d objectives", len(improved), len(objectives))
	if len(not) > 0 {
		p("; not for: %s", strings.Join(not, ", "))
	}
	p(". (%s)\n", strings.Join(improved, "; "))
	if len(policyMeans) > 0 {
		p("2. **SelMix is at least as good as every other policy on its objective** (mean over seeds):")
		for o, m := range sortedMap(policyMeans) {
			var beaten []string
			for pol, v := range sortedMap(m) {
				if pol != "selmix" && v > m["selmix"] {
					beaten = append(beaten, fmt.Sprintf("%s (%.4f > %.4f)", pol, v, m["selmix"]))
				}
			}
			if len(beaten) == 0 {
				p(" %s: yes.", o)
			} else {
				p(" %s: **no**, beaten by %s.", o, strings.Join(beaten, ", "))
			}
		}
		p("\n")
	}
	diag := 0
	var misses []string
	for _, o := range objectives {
		oc := objCol(metric.Objective(o))
		own := mean(collect(rs, "objectives", o, oc.after))
		best, bestRow := own, o
		for _, other := range objectives {
			if v := mean(collect(rs, "objectives", other, oc.after)); v > best {
				best, bestRow = v, other
			}
		}
		if bestRow == o {
			diag++
		} else {
			misses = append(misses, fmt.Sprintf("ψ %s is best when optimizing %s (%.4f vs %.4f)", o, bestRow, best, own))
		}
	}
	p("3. **The diagonal (optimized on = observed) is the best in its column** for %d of %d objectives", diag, len(objectives))
	if len(misses) > 0 {
		p("; exceptions: %s", strings.Join(misses, "; "))
	}
	p(".\n")
}

// sortedMap ranges over m in key order (the report must not change from
// one generation to the next).
func sortedMap[V any](m map[string]V) func(yield func(string, V) bool) {
	return func(yield func(string, V) bool) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if !yield(k, m[k]) {
				return
			}
		}
	}
}

// paperFigures draws, for the first seed, each policy comparison with
// `selmix export --compare` under figDir and returns the Markdown that
// shows them.
func paperFigures(rs []paperResult, figDir, figRel string) (string, error) {
	if figDir == "" {
		return "", nil
	}
	var md strings.Builder
	md.WriteString("\n## Figures (first seed, `selmix export --compare`)\n\n")
	var errs []error
	first := rs[0].seed
	objs, _ := splitLabels(rs, "policies")
	for _, o := range objs {
		var group []*viz.Run
		for _, r := range rs {
			if r.seed != first || !(r.table == "objectives" && r.label == o || r.table == "policies" && strings.HasPrefix(r.label, o+"/")) {
				continue
			}
			run, err := runs.Open(r.root, r.run)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			vr, err := viz.FromRun(run)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			// The legend names the policy, not the member's run name.
			vr.Name = "selmix"
			if _, pol, ok := strings.Cut(r.label, "/"); ok {
				vr.Name = pol
			}
			group = append(group, vr)
		}
		if len(group) < 2 {
			continue
		}
		name := "policies-" + safetext.FileName(o)
		res, err := viz.Compare(group, viz.DefaultCompareMetric(group), filepath.Join(figDir, name), viz.Options{Format: "png", DPI: 150})
		if err != nil {
			errs = append(errs, err)
		}
		if res == nil {
			continue
		}
		fmt.Fprintf(&md, "Policies on %s:\n\n", o)
		for _, f := range res.Files {
			fmt.Fprintf(&md, "![%s](%s)\n", f.Name, filepath.ToSlash(filepath.Join(figRel, name, f.Name)))
		}
		md.WriteString("\n")
	}
	return md.String(), errors.Join(errs...)
}

package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"selmix/core/atomicfile"
	"selmix/core/experiment"
	"selmix/core/metric"
	"selmix/core/model"
	"selmix/core/train"
	"selmix/runs"
	"selmix/runs/record"
	"selmix/viz"
)

// The paper-reproduction suite (issue 8): Fashion-MNIST-LT, supervised
// ρ = 100, the default MLP, several seeds; every row is an ordinary run in
// the run store, so each can be opened, compared and exported like any
// other.

type benchFlags struct {
	seeds   int
	steps   int
	epochs  int
	smoke   bool
	out     string
	runs    string
	dataDir string
	semi    bool
	sets    []string // extra keys on every row (sensitivity studies)
}

func newBenchCmd() *cobra.Command {
	bench := &cobra.Command{Use: "bench", Short: "Experiment suites"}
	var f benchFlags
	paper := &cobra.Command{
		Use:   "paper [--seeds 3] [--steps 2000] [--out docs/results.md]",
		Short: "Reproduce the paper's tables on Fashion-MNIST-LT and write them as Markdown",
		Long: `paper pre-trains an LA-CE model per seed on Fashion-MNIST-LT (ρ = 100, full
official test set) and fine-tunes it with SelMix for each objective, for each
policy (selmix, uniform, greedy, none, and the paper's baselines csst and
mislas2) on min-recall and mean-recall@cov, with
the official gain form, and in the semi-supervised setting (pseudo-labels vs
oracle labels). It writes the tables (mean ± std over seeds), the command
and config of every row, wall times and an honest check of the paper's
claims to --out. --smoke runs one seed with few steps (CI).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.smoke {
				f.seeds, f.steps, f.epochs = 1, 60, 1
			}
			ctx, cancel := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer cancel()
			return benchPaper(ctx, cmd.OutOrStdout(), f)
		},
	}
	paper.Flags().IntVar(&f.seeds, "seeds", 3, "number of seeds (1, 2, …)")
	paper.Flags().IntVar(&f.steps, "steps", 2000, "fine-tuning steps per run")
	paper.Flags().IntVar(&f.epochs, "epochs", 20, "pre-training epochs")
	paper.Flags().BoolVar(&f.smoke, "smoke", false, "1 seed, 60 steps, 1 epoch: checks the suite runs end to end")
	paper.Flags().BoolVar(&f.semi, "semi", true, "include the semi-supervised rows")
	paper.Flags().StringVar(&f.out, "out", "docs/results.md", "Markdown `FILE` to write")
	paper.Flags().StringArrayVar(&f.sets, "set", nil, "extra `section.key=value` for every run (repeatable), e.g. finetune.refresh=10")
	paper.Flags().StringVar(&f.dataDir, "data", "/usr/share/datasets/fashion-mnist", "Fashion-MNIST IDX `DIR`")
	addRunsFlag(paper, &f.runs)
	bench.AddCommand(paper, newBenchScaleCmd())
	return bench
}

// benchRow is one configuration of the suite, run once per seed.
type benchRow struct {
	table string // "objectives", "policies", "scratch", "form", "semi"
	label string
	sets  []string // on top of the seed's base
	semi  bool
	// pretrain, if set, are the keys of the row's own pre-training (on top
	// of the seed's base); the row runs from that model.
	pretrain []string
}

type benchResult struct {
	row     benchRow
	seed    uint64
	id      string
	sum     *train.Summary
	seconds float64
	cfg     string
}

// benchPolicies are the policy table's columns: SelMix's own rows come
// from the objectives table, the others are rows of their own.
var benchPolicies = []string{"selmix", "uniform", "greedy", "none", "csst", "mislas2"}

var paperObjectives = []string{"mean-recall", "min-recall", "hmean", "gmean", "mean-recall@cov", "hmean@cov"}

func paperRows(semi bool) []benchRow {
	var rows []benchRow
	for _, o := range paperObjectives {
		rows = append(rows, benchRow{table: "objectives", label: o, sets: []string{"finetune.objective=" + o}})
	}
	for _, o := range []string{"min-recall", "mean-recall@cov"} {
		for _, p := range benchPolicies[1:] {
			rows = append(rows, benchRow{table: "policies", label: o + "/" + p, sets: []string{"finetune.objective=" + o, "finetune.policy=" + p}})
		}
	}
	// CSST from scratch: pre-trained with CSST's loss for the objective,
	// not fine-tuned. The row's run takes one step of plain CE; the table
	// reports its "test before", the pre-trained model's own metrics.
	for _, o := range []string{"min-recall", "mean-recall@cov"} {
		rows = append(rows, benchRow{table: "scratch", label: o + "/csst-scratch",
			pretrain: []string{"pretrain.loss=csst", "finetune.objective=" + o},
			sets:     []string{"finetune.objective=" + o, "finetune.policy=none", "finetune.steps=1"}})
	}
	rows = append(rows, benchRow{table: "form", label: "min-recall/official", sets: []string{"finetune.objective=min-recall", "finetune.form=official"}})
	if semi {
		for _, oracle := range []bool{false, true} {
			rows = append(rows, benchRow{table: "semi", label: fmt.Sprintf("min-recall/oracle=%v", oracle), semi: true,
				sets: []string{"finetune.objective=min-recall", fmt.Sprintf("finetune.oracle_labels=%v", oracle)}})
		}
	}
	return rows
}

// benchBase is the configuration every row of one seed starts from.
func benchBase(f benchFlags, seed uint64, semi bool) []string {
	s := []string{
		fmt.Sprintf("seed=%d", seed), "data.source=fashion-mnist", "data.dir=" + f.dataDir,
		"data.rho=100", "data.test_per_class=0", "pretrain.loss=la-ce",
		fmt.Sprintf("pretrain.epochs=%d", f.epochs), fmt.Sprintf("finetune.steps=%d", f.steps),
	}
	if semi {
		// ρ_l = ρ_u = 100, matched; 500 validation + 1500 labeled + 3000
		// unlabeled images of the most frequent class fit in its 6000.
		s = append(s, "data.n1=1500", "data.unlabeled=matched", "data.m1=3000",
			"finetune.batch=64", "finetune.lr=0.0003", "pretrain.fixmatch=true")
	}
	return append(s, f.sets...)
}

func benchPaper(ctx context.Context, w io.Writer, f benchFlags) error {
	if f.seeds < 1 || f.steps < 1 || f.epochs < 1 {
		return badInput("--seeds, --steps and --epochs must be ≥ 1")
	}
	root := f.runs
	if root == "" {
		root = filepath.Join("runs", "bench-paper")
	}
	// Pre-trained checkpoints stay beside the runs (a hidden directory the
	// store does not list), so every row's config can be re-run.
	ckdir := filepath.Join(root, ".pretrained")
	if err := os.MkdirAll(ckdir, 0o755); err != nil {
		return err
	}
	start := time.Now()
	rows := paperRows(f.semi)
	var results []benchResult
	pretrainSecs := map[string]float64{}
	for s := 1; s <= f.seeds; s++ {
		seed := uint64(s)
		for _, semi := range []bool{false, true} {
			if semi && !f.semi {
				continue
			}
			base := benchBase(f, seed, semi)
			ckpt := filepath.Join(ckdir, fmt.Sprintf("seed%d-semi%v.npz", seed, semi))
			t0 := time.Now()
			if err := benchPretrain(ctx, base, ckpt); err != nil {
				return fmt.Errorf("seed %d: pre-training: %w", seed, err)
			}
			pretrainSecs[fmt.Sprintf("%d/%v", seed, semi)] = time.Since(t0).Seconds()
			fmt.Fprintf(w, "seed %d: pre-trained (%s) in %.1fs\n", seed, map[bool]string{false: "supervised", true: "semi-supervised"}[semi], time.Since(t0).Seconds())
			for _, row := range rows {
				if row.semi != semi {
					continue
				}
				rowCkpt := ckpt
				if row.pretrain != nil {
					rowCkpt = filepath.Join(ckdir, fmt.Sprintf("seed%d-%s.npz", seed, viz.SafeName(row.label)))
					t0 := time.Now()
					if err := benchPretrain(ctx, append(append([]string(nil), base...), row.pretrain...), rowCkpt); err != nil {
						return fmt.Errorf("seed %d, %s: pre-training: %w", seed, row.label, err)
					}
					pretrainSecs[fmt.Sprintf("%d/%s", seed, row.label)] = time.Since(t0).Seconds()
				}
				sets := append(append(append([]string(nil), base...), "model.checkpoint="+rowCkpt), row.sets...)
				sets = append(sets, fmt.Sprintf("name=bench-%s-seed%d", viz.SafeName(row.label), seed))
				res, err := benchRun(ctx, root, sets)
				if err != nil {
					return fmt.Errorf("seed %d, %s: %w", seed, row.label, err)
				}
				res.row, res.seed = row, seed
				results = append(results, res)
				fmt.Fprintf(w, "seed %d  %-28s  ψ %.4f → %.4f  (%.1fs, run %s)\n", seed, row.label,
					objValue(res.sum.TestObjBefore, res.sum.Objective), objValue(res.sum.TestObjAfter, res.sum.Objective), res.seconds, res.id)
			}
		}
	}
	figs, err := benchFigures(f, results, root)
	if err != nil {
		fmt.Fprintf(w, "warning: figures: %v\n", err)
	}
	total := time.Since(start)
	md := paperMarkdown(f, results, pretrainSecs, total, root) + figs
	if err := os.MkdirAll(filepath.Dir(f.out), 0o755); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(f.out, []byte(md)); err != nil {
		return err
	}
	fmt.Fprintf(w, "wrote %s (%d runs in %.1f min)\n", f.out, len(results), total.Minutes())
	return nil
}

// benchFigures exports the policy comparisons of the first seed with
// `selmix export --compare` into figures/ beside the Markdown, and returns
// the Markdown that shows them.
func benchFigures(f benchFlags, rs []benchResult, root string) (string, error) {
	var md strings.Builder
	md.WriteString("\n## Figures (seed 1, `selmix export --compare`)\n\n")
	var errs []error
	for _, o := range []string{"min-recall", "mean-recall@cov"} {
		var group []*viz.Run
		for _, r := range rs {
			if r.seed != 1 || !(r.row.table == "objectives" && r.row.label == o || r.row.table == "policies" && strings.HasPrefix(r.row.label, o+"/")) {
				continue
			}
			run, err := runs.Open(root, r.id)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			vr, err := viz.FromRun(run)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			group = append(group, vr)
		}
		if len(group) < 2 {
			continue
		}
		rel := filepath.Join("figures", "policies-"+viz.SafeName(o))
		res, err := viz.Compare(group, viz.DefaultCompareMetric(group), filepath.Join(filepath.Dir(f.out), rel), viz.Options{Format: "png", DPI: 150})
		if err != nil {
			errs = append(errs, err)
		}
		if res == nil {
			continue
		}
		fmt.Fprintf(&md, "Policies on %s (%s):\n\n", o, strings.Join(benchPolicies, ", "))
		for _, file := range res.Files {
			fmt.Fprintf(&md, "![%s](%s)\n", file.Name, filepath.ToSlash(filepath.Join(rel, file.Name)))
		}
		md.WriteString("\n")
	}
	return md.String(), errors.Join(errs...)
}

func benchPretrain(ctx context.Context, sets []string, out string) error {
	c, err := experiment.Load("", sets)
	if err != nil {
		return usageError{err}
	}
	sp, _, err := experiment.LoadData(c)
	if err != nil {
		return usageError{err}
	}
	net, err := model.New(experiment.ModelConfig(c, sp))
	if err != nil {
		return err
	}
	if err := train.Pretrain(ctx, net, sp, c.PretrainConfig(), nil); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := net.Save(&buf); err != nil {
		return err
	}
	return atomicfile.WriteFile(out, buf.Bytes())
}

func benchRun(ctx context.Context, root string, sets []string) (benchResult, error) {
	c, err := experiment.Load("", sets)
	if err != nil {
		return benchResult{}, usageError{err}
	}
	var id string
	t0 := time.Now()
	if err := startRun(ctx, io.Discard, c, startOpts{root: root, quiet: true, created: func(s string) { id = s }}); err != nil {
		return benchResult{}, err
	}
	r, err := runs.Open(root, id)
	if err != nil {
		return benchResult{}, err
	}
	h, err := record.Load(r)
	if err != nil {
		return benchResult{}, err
	}
	if h.Final == nil {
		return benchResult{}, fmt.Errorf("run %s has no final summary", id)
	}
	return benchResult{id: id, sum: h.Final, seconds: time.Since(t0).Seconds(), cfg: strings.Join(sets, " ")}, nil
}

// objValue is the value of objective o among vals (metric.Objectives()
// order).
func objValue(vals []float64, o metric.Objective) float64 {
	for i, x := range metric.Objectives() {
		if x == o && i < len(vals) {
			return vals[i]
		}
	}
	return math.NaN()
}

// column is one observed quantity of the tables.
type column struct {
	name string
	get  func(s *train.Summary, after bool) float64
}

func reportCol(name string, f func(metric.Report) float64) column {
	return column{name, func(s *train.Summary, after bool) float64 {
		if after {
			return f(s.TestAfter)
		}
		return f(s.TestBefore)
	}}
}

func objCol(o metric.Objective) column {
	return column{"ψ " + string(o), func(s *train.Summary, after bool) float64 {
		if after {
			return objValue(s.TestObjAfter, o)
		}
		return objValue(s.TestObjBefore, o)
	}}
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

// meanStd of xs; std is the sample standard deviation (0 for one value).
func meanStd(xs []float64) (float64, float64) {
	m := 0.0
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	if len(xs) < 2 {
		return m, 0
	}
	v := 0.0
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return m, math.Sqrt(v / float64(len(xs)-1))
}

func fmtMS(xs []float64) string {
	m, s := meanStd(xs)
	if len(xs) < 2 {
		return fmt.Sprintf("%.4f", m)
	}
	return fmt.Sprintf("%.4f ± %.4f", m, s)
}

// collect gathers, over seeds, column c of the results with the given
// label (after fine-tuning, or the pre-trained model when !after).
func collect(rs []benchResult, table, label string, c column, after bool) []float64 {
	var xs []float64
	for _, r := range rs {
		if r.row.table == table && r.row.label == label {
			xs = append(xs, c.get(r.sum, after))
		}
	}
	return xs
}

func paperMarkdown(f benchFlags, rs []benchResult, pre map[string]float64, total time.Duration, root string) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# SelMix on Fashion-MNIST-LT: reproducing the paper's pattern\n\n")
	extra := ""
	for _, kv := range f.sets {
		extra += " --set " + kv
	}
	p("Generated by `selmix bench paper --seeds %d --steps %d --epochs %d%s` on %s (%d runs, %.1f min wall time in all).\n",
		f.seeds, f.steps, f.epochs, extra, time.Now().UTC().Format("2006-01-02"), len(rs), total.Minutes())
	p("Supervised rows: Fashion-MNIST-LT, ρ = 100, N₁ = 5000, 500 validation images per class, the full official test set (10 000 images), MLP 784→256→128, pre-trained with LA-CE for %d epochs, then %d SelMix fine-tuning steps (defaults B = 128, η = 3e-3, refresh 50, changed only by the --set keys above). Metrics are on the test set, mean ± sample std over %d seed(s). Every row is a run in `%s`; open it with `selmix open`, compare with `selmix runs compare`.\n\n",
		f.epochs, f.steps, f.seeds, root)
	if f.smoke {
		p("**Smoke run**: one seed, %d steps, %d epoch(s): it checks that the suite runs, not what it finds.\n\n", f.steps, f.epochs)
	}
	header := func(first string) {
		p("| %s |", first)
		for _, c := range paperColumns {
			p(" %s |", c.name)
		}
		p("\n|---|")
		for range paperColumns {
			p("---|")
		}
		p("\n")
	}
	// Table 1: optimized on × observed.
	p("## Optimized on × observed (paper Table \"full_metric_runs\")\n\n")
	header("optimized on")
	if len(rs) > 0 {
		p("| pre-trained (LA-CE) |")
		for _, c := range paperColumns {
			p(" %s |", fmtMS(collect(rs, "objectives", paperObjectives[0], c, false)))
		}
		p("\n")
	}
	for _, o := range paperObjectives {
		p("| %s |", o)
		for _, c := range paperColumns {
			p(" %s |", fmtMS(collect(rs, "objectives", o, c, true)))
		}
		p("\n")
	}
	// Table 2: policies.
	p("\n## Policy comparison at the same budget (paper Table \"policy-comparison\")\n\n")
	p("Each cell: the optimized objective on test after fine-tuning. csst fine-tunes with CSST's consistent loss for the objective's linearisation, mislas2 re-trains the head with MiSLAS's label-aware smoothing (docs/method.md, \"Baselines\").\n\n| objective |")
	for _, pol := range benchPolicies {
		p(" %s |", pol)
	}
	p("\n|---|%s\n", strings.Repeat("---|", len(benchPolicies)))
	policyMeans := map[string]map[string]float64{}
	for _, o := range []string{"min-recall", "mean-recall@cov"} {
		oc := objCol(metric.Objective(o))
		policyMeans[o] = map[string]float64{}
		p("| %s |", o)
		for _, pol := range benchPolicies {
			var xs []float64
			if pol == "selmix" {
				xs = collect(rs, "objectives", o, oc, true)
			} else {
				xs = collect(rs, "policies", o+"/"+pol, oc, true)
			}
			if len(xs) > 0 {
				policyMeans[o][pol], _ = meanStd(xs)
			}
			p(" %s |", fmtMS(xs))
		}
		p("\n")
	}
	p("\nCSST from scratch: pre-trained with `pretrain.loss = csst` for the objective (each epoch, CSST's consistent loss for its linearisation at the validation C), not fine-tuned; the optimized objective on test.\n\n| objective | CSST from scratch |\n|---|---|\n")
	for _, o := range []string{"min-recall", "mean-recall@cov"} {
		p("| %s | %s |\n", o, fmtMS(collect(rs, "scratch", o+"/csst-scratch", objCol(metric.Objective(o)), false)))
	}
	// Table 3: gain form.
	p("\n## Gain form (min-recall)\n\n| form | ψ min-recall | mean rec |\n|---|---|---|\n")
	mr := objCol(metric.MinRecall)
	mean := paperColumns[0]
	p("| paper | %s | %s |\n", fmtMS(collect(rs, "objectives", "min-recall", mr, true)), fmtMS(collect(rs, "objectives", "min-recall", mean, true)))
	p("| official | %s | %s |\n", fmtMS(collect(rs, "form", "min-recall/official", mr, true)), fmtMS(collect(rs, "form", "min-recall/official", mean, true)))
	if f.semi {
		p("\n## Semi-supervised (ρ_l = ρ_u = 100, matched; N₁ = 1500, M₁ = 3000; FixMatch + LA pre-training; B = 64, η = 3e-4)\n\n")
		p("| x2 drawn by | ψ min-recall before | after | mean rec after |\n|---|---|---|---|\n")
		for _, oracle := range []bool{false, true} {
			l := fmt.Sprintf("min-recall/oracle=%v", oracle)
			name := map[bool]string{false: "pseudo-labels", true: "oracle labels"}[oracle]
			p("| %s | %s | %s | %s |\n", name, fmtMS(collect(rs, "semi", l, mr, false)), fmtMS(collect(rs, "semi", l, mr, true)), fmtMS(collect(rs, "semi", l, mean, true)))
		}
	}
	// Claims.
	p("\n## Do the paper's claims hold here?\n\n")
	var improved, notImproved []string
	for _, o := range paperObjectives {
		oc := objCol(metric.Objective(o))
		before, _ := meanStd(collect(rs, "objectives", o, oc, false))
		after, _ := meanStd(collect(rs, "objectives", o, oc, true))
		if after > before {
			improved = append(improved, fmt.Sprintf("%s %.4f → %.4f", o, before, after))
		} else {
			notImproved = append(notImproved, fmt.Sprintf("%s %.4f → %.4f", o, before, after))
		}
	}
	p("1. **SelMix improves the optimized objective over the pre-trained model** for %d of %d objectives", len(improved), len(paperObjectives))
	if len(notImproved) > 0 {
		p("; not for: %s", strings.Join(notImproved, ", "))
	}
	p(". (%s)\n", strings.Join(improved, "; "))
	p("2. **SelMix is at least as good as %s on its objective** (mean over seeds):", strings.Join(benchPolicies[1:], ", "))
	for _, o := range []string{"min-recall", "mean-recall@cov"} {
		m := policyMeans[o]
		var worse []string
		for _, pol := range benchPolicies[1:] {
			if v, ok := m[pol]; ok && v > m["selmix"] {
				worse = append(worse, fmt.Sprintf("%s (%.4f > %.4f)", pol, v, m["selmix"]))
			}
		}
		if len(worse) == 0 {
			p(" %s: yes.", o)
		} else {
			p(" %s: **no**, beaten by %s.", o, strings.Join(worse, ", "))
		}
	}
	p("\n")
	// Diagonal: for each objective's own column, is its row the best?
	diag, cols := 0, 0
	var misses []string
	for _, o := range paperObjectives {
		oc := objCol(metric.Objective(o))
		own, _ := meanStd(collect(rs, "objectives", o, oc, true))
		best, bestRow := own, o
		for _, other := range paperObjectives {
			v, _ := meanStd(collect(rs, "objectives", other, oc, true))
			if v > best {
				best, bestRow = v, other
			}
		}
		cols++
		if bestRow == o {
			diag++
		} else {
			misses = append(misses, fmt.Sprintf("ψ %s is best when optimizing %s (%.4f vs %.4f)", o, bestRow, best, own))
		}
	}
	p("3. **The diagonal (optimized on = observed) is the best in its column** for %d of %d objectives", diag, cols)
	if len(misses) > 0 {
		p("; exceptions: %s", strings.Join(misses, "; "))
	}
	p(".\n\n")
	// Provenance.
	p("## Runs\n\nEach row's configuration is the seed's base plus its own keys (`selmix run --headless --set KEY=VALUE ...`):\n\n")
	p("| row | seed | run | wall s | --set |\n|---|---|---|---|---|\n")
	for _, r := range rs {
		p("| %s | %d | `%s` | %.1f | `%s` |\n", r.row.label, r.seed, r.id, r.seconds, strings.ReplaceAll(r.cfg, "|", "\\|"))
	}
	p("\nPre-training wall times:")
	for k, v := range pre {
		p(" %s %.1fs;", k, v)
	}
	p("\n")
	return b.String()
}

package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"selmix/app"
	"selmix/core/gain"
	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/core/train"
)

type gainFlags struct {
	stats, out string
	hyper      map[string]*string // one flag per hyperparameter that decides G and P
}

func newGainCmd() *cobra.Command {
	f := gainFlags{hyper: map[string]*string{}}
	cmd := &cobra.Command{
		Use:   "gain --stats STATS.npz --objective NAME --out OUT.npz",
		Short: "Compute the gain matrix G and mixup distribution P from validation statistics",
		Long: `gain reads float64 arrays C (K×K joint validation confusion), Z (K×d class
centroids), W (d×K head), b (K) and optionally train_counts (K) from STATS.npz,
and writes G, P, D (K×K), lambda (the objective's multipliers, empty if none)
and the scalar psi to OUT.npz: what a refresh of the fine-tuning loop derives,
by the same function. The hyperparameter flags are the [finetune] keys of the
configuration (dashes for underscores), with their defaults.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runGain(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.stats, "stats", "", "input statistics `STATS.npz` (required)")
	fl.StringVar(&f.out, "out", "", "output `OUT.npz` (required)")
	def := loop.DefaultHyper()
	for _, key := range loop.GainKeys() {
		v, _ := def.Get(key)
		f.hyper[key] = fl.String(strings.ReplaceAll(key, "_", "-"), v, loop.HyperDoc(key))
	}
	for _, name := range []string{"stats", "out", "objective"} {
		cmd.MarkFlagRequired(name)
	}
	return cmd
}

func runGain(cmd *cobra.Command, f gainFlags) error {
	h := loop.DefaultHyper()
	for _, key := range loop.GainKeys() {
		if err := h.Set(key, *f.hyper[key]); err != nil {
			return app.BadInput("--%s", strings.ReplaceAll(err.Error(), "_", "-"))
		}
	}
	if h.CovMargin == loop.MarginAuto {
		// The archive holds C as fractions, not the validation size the
		// margin needs (docs/method.md, "The coverage margin").
		return app.BadInput("--cov-margin auto: a statistics archive does not hold the validation size; give the margin δ as a number (0 = the paper's α/K)")
	}
	if h.Form == gain.Samples {
		return app.BadInput("--form samples: a statistics archive holds the class centroids, not the samples' features that form needs; use paper or official")
	}
	st, err := app.ReadStats(f.stats)
	if err != nil {
		return app.UsageError{Err: err}
	}
	if err := metric.Check(st.C, nil); err != nil {
		return app.BadInput("%s: member \"C.npy\": %v", f.stats, err)
	}
	d, err := train.Decide(nil, st.Stats(), h)
	if err != nil {
		return app.BadInput("%s: %v", f.stats, err)
	}
	if err := app.WriteDecision(f.out, d); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s = %.6f (K=%d, d=%d, form %s, policy %s) → %s\n",
		h.Objective, d.Eval.Psi, st.K, st.D, h.Form, h.Policy, f.out)
	return nil
}

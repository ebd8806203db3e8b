package cli

import (
	"github.com/spf13/cobra"

	"selmix/app"
)

func newPretrainCmd() *cobra.Command {
	var (
		config, out, splitOut string
		sets                  []string
	)
	cmd := &cobra.Command{
		Use:   "pretrain [--config FILE] [--set section.key=value ...] --out CKPT.npz",
		Short: "Pre-train a model with (logit-adjusted) cross-entropy and write a checkpoint",
		Long: `pretrain builds the configured split, trains a fresh model on its labeled set
with cross-entropy or logit-adjusted cross-entropy ([pretrain] section), and
writes a checkpoint that run loads with --set model.checkpoint=CKPT.npz.
--split-out also writes the split itself, as make assets does for
the built-in experiment.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := loadConfig(config, sets)
			if err != nil {
				return err
			}
			ctx, code, stop := app.SignalContext(cmd.Context())
			defer stop()
			err = app.PretrainTo(ctx, cmd.OutOrStdout(), c, out, splitOut)
			return app.Interrupted(err, code, "pre-training interrupted; "+out+" not written")
		},
	}
	addConfigFlags(cmd, &config, &sets)
	cmd.Flags().StringVar(&out, "out", "", "checkpoint `FILE` to write (.npz, required)")
	cmd.Flags().StringVar(&splitOut, "split-out", "", "also write the split to `FILE` (.bin)")
	cmd.MarkFlagRequired("out")
	return cmd
}

package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"selmix/core/experiment"
)

func newConfigCmd() *cobra.Command {
	var (
		config string
		sets   []string
	)
	cmd := &cobra.Command{
		Use:   "config [--config FILE] [--set section.key=value ...]",
		Short: "Print the documented default configuration, or the resolved one",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if config == "" && len(sets) == 0 {
				fmt.Fprint(cmd.OutOrStdout(), experiment.DefaultTOML())
				return nil
			}
			c, err := loadConfig(config, sets)
			if err != nil {
				return err
			}
			s, err := c.Encode()
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), s)
			return nil
		},
	}
	addConfigFlags(cmd, &config, &sets)
	return cmd
}

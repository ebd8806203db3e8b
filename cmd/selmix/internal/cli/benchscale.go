package cli

import (
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

	"selmix/app"
	"selmix/bench"
	"selmix/internal/atomicfile"
)

func newBenchScaleCmd() *cobra.Command {
	var (
		ks       []int
		out, dir string
	)
	cmd := &cobra.Command{
		Use:   "scale [--k 100,1000] [--out FILE.md] [--dir DIR]",
		Short: "Measure selmix at the paper's scales (K = 100, 1000) on synthetic long-tailed features",
		Long: `scale writes long-tailed Gaussian-cluster features with a nearest-class-mean
head — K = 100 (d = 128, 10 000 validation samples) and K = 1000 (d = 512,
107 140 training, 20 000 validation and 50 000 test samples, ImageNet-1k-LT's
shape) — runs selmix on them, and reports the size of the run on disk per
refresh, how fast and how lean it opens and exports, the memory of the run,
the time of one refresh, and the time of a head-only SelMix step at K = 10,
d = 64, B = 128 beside PyTorch's (when /usr/bin/python3 has torch), each with
its target. Measure on a quiet machine.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			self, err := os.Executable()
			if err != nil {
				return err
			}
			if dir == "" {
				if dir, err = os.MkdirTemp("", "selmix-scale-"); err != nil {
					return err
				}
				defer os.RemoveAll(dir)
			}
			o := bench.ScaleOptions{Dir: dir, Binary: self, Log: cmd.ErrOrStderr()}
			for _, k := range ks {
				switch k {
				case 100:
					o.Cases = append(o.Cases, bench.ScaleK100)
				case 1000:
					o.Cases = append(o.Cases, bench.ScaleK1000)
				default:
					return app.BadInput("--k %d: the scale cases are 100 and 1000", k)
				}
			}
			if exec.Command("/usr/bin/python3", "-c", "import torch").Run() == nil {
				o.Torch = "/usr/bin/python3"
			}
			rows, err := bench.Scale(cmd.Context(), o)
			if err != nil {
				return err
			}
			var b strings.Builder
			fmt.Fprintf(&b, "| what | measured | target | met |\n|---|---|---|---|\n")
			for _, r := range rows {
				ok := "yes"
				if !r.OK {
					ok = "**no**"
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.What, r.Measured, r.Target, ok)
			}
			fmt.Fprint(cmd.OutOrStdout(), b.String())
			if out != "" {
				return atomicfile.WriteFile(out, []byte(b.String()))
			}
			return nil
		},
	}
	cmd.Flags().IntSliceVar(&ks, "k", []int{100, 1000}, "the cases to run: 100 and/or 1000")
	cmd.Flags().StringVar(&out, "out", "", "also write the table to `FILE.md`")
	cmd.Flags().StringVar(&dir, "dir", "", "keep the features and runs in `DIR` (default: a temporary folder, removed)")
	return cmd
}

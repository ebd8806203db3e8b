// Command selmix is the SelMix workbench: fine-tune a classifier with
// Selective Mixup for a non-decomposable objective and watch it work.
package main

import (
	"os"

	"selmix/cmd/selmix/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}

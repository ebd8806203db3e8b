// Command selmix is the SelMix workbench: fine-tune a classifier with
// Selective Mixup for a non-decomposable objective and watch it work.
package main

import (
	"os"
	"syscall"

	"selmix/cmd/selmix/internal/cli"
)

func main() {
	cli.Restart = func(env []string) error {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		return syscall.Exec(exe, os.Args, env)
	}
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}

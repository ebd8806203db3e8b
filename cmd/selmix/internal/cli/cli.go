// Package cli wires selmix's subcommands. Each command lives in its own
// file; main.go only calls Main.
package cli

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/spf13/cobra"

	"selmix/app"
	"selmix/internal/safetext"
)

// Main runs the command line and returns the process exit code: 0
// success, 1 failure, 2 bad input, 130 or 143 a run stopped early by
// SIGINT or by SIGTERM / `selmix stop` (resumable).
func Main(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		// A bug must end in one line and a failure code, not a trace.
		if p := recover(); p != nil {
			fmt.Fprintf(stderr, "selmix: internal error: %v (please report it with the command that caused it)\n", p)
			code = 1
		}
	}()
	// SELMIX_CPUPROFILE=FILE writes a Go CPU profile of the command (for
	// `go tool pprof`), as the measurements in docs/ were analysed.
	if path := os.Getenv("SELMIX_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil && pprof.StartCPUProfile(f) == nil {
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
	}
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	// An error may quote what selmix read (a path, a name, a line of a
	// file): each of its lines is made printable.
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = safetext.Line(l)
	}
	fmt.Fprintf(stderr, "selmix: %s\n", strings.Join(lines, "\n"))
	// Cobra's own argument errors are bad input too; it has no typed
	// errors for them.
	if code := app.ExitCode(err); code != app.ExitFailure || !isCobraUsage(err) {
		return code
	}
	return app.ExitBadInput
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "selmix",
		Short: "Selective Mixup fine-tuning for non-decomposable objectives",
		Long: `selmix fine-tunes a pre-trained classifier with Selective Mixup (SelMix,
ICLR 2024) so that a non-decomposable objective — worst-case recall, H-mean,
G-mean, recall under coverage constraints — improves.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	// Flag parse errors are input errors too.
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return app.UsageError{Err: fmt.Errorf("%s: %v", c.CommandPath(), err)}
	})
	root.AddCommand(newGainCmd(), newRunCmd(), newPretrainCmd(), newConfigCmd(),
		newRunsCmd(), newResumeCmd(), newForkCmd(), newReplayCmd(), newExportHeadCmd(), newExportCmd(),
		newPsCmd(), newStopCmd(), newAttachCmd(), newBenchCmd(), newSweepCmd())
	attachWorkbench(root)
	return root
}

// withSuggestions checks the arguments of a command that has
// subcommands with base, and first names the subcommand a mistyped first
// argument is close to: "unknown command "runz" for "selmix" (did you
// mean run or runs?)". Cobra suggests only for a root without its own
// Run; an argument that is an existing file (a sweep's spec) is left to
// base.
func withSuggestions(base cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 && cmd.HasAvailableSubCommands() {
			if cmd.SuggestionsMinimumDistance <= 0 {
				cmd.SuggestionsMinimumDistance = 2 // cobra's default, which SuggestionsFor does not apply
			}
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				if _, err := os.Stat(args[0]); err != nil {
					return fmt.Errorf("unknown command %q for %q (did you mean %s?)", args[0], cmd.CommandPath(), strings.Join(s, " or "))
				}
			}
		}
		return base(cmd, args)
	}
}

// isCobraUsage recognises the argument errors cobra raises itself (it has
// no typed errors for them).
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"required flag", "unknown command", "accepts ", "requires at least ", "unknown flag", "invalid argument"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"selmix/app"
	"selmix/internal/safetext"
	"selmix/runs"
)

// newAnnotateCmds are runs tag, untag and note; root points at the runs
// command's --runs flag.
func newAnnotateCmds(root *string) []*cobra.Command {
	tag := &cobra.Command{
		Use:   "tag RUN TAG...",
		Short: "Tag a run (runs ls --tag T lists the runs tagged T)",
		Long: `tag adds tags to a run's run.json. A tag is one word: no whitespace, no
control characters, at most 64 bytes; a run's tags and note together take
at most 64 KiB of run.json. A live run can be tagged.`,
		Args: argsWant(2, -1, "a run and at least one tag"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return annotate(cmd.OutOrStdout(), runs.Root(*root), args[0], args[1:], nil, nil)
		},
	}
	untag := &cobra.Command{
		Use:   "untag RUN TAG...",
		Short: "Remove tags from a run",
		Args:  argsWant(2, -1, "a run and at least one tag"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return annotate(cmd.OutOrStdout(), runs.Root(*root), args[0], nil, args[1:], nil)
		},
	}
	note := &cobra.Command{
		Use:   "note RUN TEXT",
		Short: `Write a note about a run ("" clears it)`,
		Long: `note replaces a run's note with TEXT (at most 4096 bytes; newlines and
tabs are kept, other control characters refused). runs show prints it.`,
		Args: argsWant(2, 2, `a run and the note's text ("" clears it)`),
		RunE: func(cmd *cobra.Command, args []string) error {
			return annotate(cmd.OutOrStdout(), runs.Root(*root), args[0], nil, nil, &args[1])
		},
	}
	return []*cobra.Command{tag, untag, note}
}

// argsWant accepts min to max arguments (max < 0: no limit); otherwise it
// is an input error saying what the command takes.
func argsWant(min, max int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < min || (max >= 0 && len(args) > max) {
			return app.BadInput("%s takes %s (got %d)", cmd.CommandPath(), what, len(args))
		}
		return nil
	}
}

// annotate is app.Annotate, then prints what the run has.
func annotate(w io.Writer, root, id string, add, remove []string, note *string) error {
	r, err := app.Annotate(root, id, add, remove, note)
	if err != nil {
		return err
	}
	tags := "(none)"
	if len(r.Meta.Tags) > 0 {
		tags = safetext.Line(strings.Join(r.Meta.Tags, " "))
	}
	fmt.Fprintf(w, "%s  tags: %s\n", r.Meta.ID, tags)
	if note != nil {
		if r.Meta.Note == "" {
			fmt.Fprintf(w, "%s  note cleared\n", r.Meta.ID)
		} else {
			fmt.Fprintf(w, "%s  note: %s\n", r.Meta.ID, safetext.Cut(r.Meta.Note, 60))
		}
	}
	return nil
}

// checkTagFlags refuses a --tag no run can carry.
func checkTagFlags(tags []string) error {
	for _, t := range tags {
		if err := runs.CheckTag(t); err != nil {
			return app.BadInput("--tag: %v", err)
		}
	}
	return nil
}

package app

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"selmix/core/experiment"
	"selmix/internal/safetext"
	"selmix/runs"
	"selmix/runs/export"
	"selmix/runs/record"
)

// OpenRun opens run id of root; a run that is not there, or not a run,
// is bad input.
func OpenRun(root, id string) (*runs.Run, error) {
	r, err := runs.Open(root, id)
	if err != nil {
		return nil, UsageError{err}
	}
	return r, nil
}

// FindRun opens arg as a directory holding run.json, else by id, prefix
// or name in the runs root root, as given (runs.Find); a run that is not
// there, or not a run, is bad input.
func FindRun(root, arg string) (*runs.Run, error) {
	r, err := runs.Find(runs.Root(root), arg)
	if err != nil {
		return nil, UsageError{err}
	}
	return r, nil
}

// SelectRuns opens the runs args name (FindRun), or with none every run
// of root carrying every tag of tags, passing over broken ones with a
// line on errw each. Tags with runs named, or nothing selected, is bad
// input.
func SelectRuns(errw io.Writer, root string, args, tags []string) ([]*runs.Run, error) {
	var out []*runs.Run
	if len(args) > 0 {
		if len(tags) > 0 {
			return nil, BadInput("--tag selects runs when no RUN is given")
		}
		for _, a := range args {
			r, err := FindRun(root, a)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		return out, nil
	}
	all, err := runs.List(runs.Root(root))
	if err != nil {
		return nil, err
	}
	sel := runs.Tagged(all, tags)
	for i := range sel {
		r := &sel[i]
		if r.Broken() {
			fmt.Fprintf(errw, "selmix: skipped %s\n", safetext.Cut(r.Meta.ID+" ("+r.Meta.Status+")", 200))
			continue
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		tagged := ""
		if len(tags) > 0 {
			tagged = " is tagged " + strings.Join(tags, " and ")
		}
		return nil, BadInput("no run in %s%s", runs.Root(root), safetext.Line(tagged))
	}
	return out, nil
}

// OpenRecorded opens runs ids of root as every export reads them
// (export.Load), in the order given.
func OpenRecorded(root string, ids []string) ([]export.Recorded, error) {
	var rs []export.Recorded
	for _, id := range ids {
		r, err := OpenRun(root, id)
		if err != nil {
			return nil, err
		}
		e, err := export.Load(r)
		if err != nil {
			return nil, err
		}
		rs = append(rs, e)
	}
	return rs, nil
}

// Annotate adds the tags add to run id of root, removes the tags remove
// and, unless note is nil, sets its note (runs.Retag); it returns the run
// as it is then. A tag or note no run may carry is bad input and changes
// nothing.
func Annotate(root, id string, add, remove []string, note *string) (*runs.Run, error) {
	for _, t := range add {
		if err := runs.CheckTag(t); err != nil {
			return nil, UsageError{err}
		}
	}
	if note != nil {
		if err := runs.CheckNote(*note); err != nil {
			return nil, UsageError{err}
		}
	}
	if _, err := OpenRun(root, id); err != nil {
		return nil, err
	}
	r, err := runs.Retag(root, id, add, remove, note)
	if errors.Is(err, runs.ErrAnnotationTooLarge) {
		return nil, UsageError{err}
	}
	return r, err
}

// OpenHistory opens a run and decodes its event log.
func OpenHistory(root, id string) (*runs.Run, *record.History, error) {
	r, err := OpenRun(root, id)
	if err != nil {
		return nil, nil, err
	}
	h, err := record.Load(r)
	if err != nil {
		return nil, nil, err
	}
	return r, h, nil
}

// RunConfig parses the resolved configuration a run was recorded with;
// one that does not parse is bad input.
func RunConfig(r *runs.Run) (experiment.Config, error) {
	text, err := r.Config()
	if err != nil {
		return experiment.Config{}, err
	}
	c, err := experiment.ParseRecorded(text, filepath.Join(r.Dir, "config.toml"))
	if err != nil {
		return c, UsageError{err}
	}
	return c, nil
}

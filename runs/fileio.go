package runs

import (
	"errors"
	"os"
	"path/filepath"

	"selmix/internal/atomicfile"
	"selmix/internal/boundedfile"
)

// file is what the writer needs from an open file. Every file the writer
// writes goes through it, so tests can inject failures (see Writer.wrap).
type file interface {
	Write(p []byte) (int, error)
	Sync() error
	Truncate(size int64) error
	Close() error
}

// writeAtomic replaces path with b through atomicfile (mode 0644); wrap,
// if not nil, wraps the temp file so tests can inject failures.
func writeAtomic(path string, b []byte, wrap func(file) file) error {
	var o atomicfile.Options
	if wrap != nil {
		o.Wrap = func(f *os.File) atomicfile.File { return wrap(f) }
	}
	return o.WriteFile(path, b)
}

// Bounds of the files of a run (docs/run-format.md), checked before they
// are read; arrays.bin is read record by record, each checked against the
// file's size.
var (
	metaFile    = boundedfile.Limit{What: "run.json", Max: 1 << 20}
	configFile  = boundedfile.Limit{What: "config.toml", Max: 4 << 20}
	summaryFile = boundedfile.Limit{What: "summary.json", Max: 256 << 20}
	eventsFile  = boundedfile.Limit{What: "events.jsonl", Max: 8 << 30}
	ckptFile    = boundedfile.Limit{What: "checkpoint", Max: 16 << 30}
	lockFile    = boundedfile.Limit{What: "lock file", Max: 64}
)

// readDir is os.ReadDir with a missing folder read as an empty one.
func readDir(dir string) ([]os.DirEntry, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return ents, err
}

// removeTemps deletes the temp files of atomic writes a crashed writer
// left in dir.
func removeTemps(dir string) error {
	ents, err := readDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.IsDir() && atomicfile.IsTemp(e.Name()) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// WriteFile replaces path with b the way every file of a run is written
// (temp file, fsync, rename, fsync of the directory), for packages that
// keep files beside runs (sweeps).
func WriteFile(path string, b []byte, perm os.FileMode) error {
	return atomicfile.Options{Perm: perm}.WriteFile(path, b)
}

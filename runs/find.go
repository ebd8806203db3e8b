package runs

import (
	"os"
	"path/filepath"
	"strings"
)

// Find opens the run arg names: arg itself when it is a directory holding
// run.json, else the run of root whose id, unique id prefix or name it is
// (Open).
func Find(root, arg string) (*Run, error) {
	if _, err := os.Stat(filepath.Join(arg, "run.json")); err == nil {
		dir := filepath.Clean(arg)
		return Open(filepath.Dir(dir), filepath.Base(dir))
	}
	return Open(root, arg)
}

// WorkerCommand is the worker command that trains (or trained) r,
// worker.command of its config.toml joined by spaces: "" for the
// in-process trainer, or a config that does not say.
func (r *Run) WorkerCommand() string {
	c, err := r.Recorded()
	if err != nil {
		return ""
	}
	return strings.Join(c.Worker.Command, " ")
}

package runs

import (
	"os"
	"path/filepath"
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

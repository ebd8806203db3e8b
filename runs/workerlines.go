package runs

import (
	"bufio"
	"os"
	"path/filepath"
)

// WorkerLines returns the last n lines a run's worker wrote, as its
// folder keeps them (worker.log, then worker.tail.log.1 and
// worker.tail.log): what a viewer that attaches shows in its console,
// the worker's start-up included. A run without them has none.
func WorkerLines(dir string, n int) []string {
	var out []string
	for _, name := range []string{WorkerLogName, WorkerTailName + ".1", WorkerTailName} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			out = append(out, sc.Text())
			if len(out) > 2*n {
				out = append(out[:0], out[len(out)-n:]...)
			}
		}
		f.Close()
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

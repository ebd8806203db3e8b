package runs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// worker.log keeps the first bytes, worker.tail.log and .1 the last; what
// falls between is dropped, and viewers are told, with the count where it
// is known.
func TestWorkerLogBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var notes []string
	l := OpenWorkerLog(dir, 100, 100, func(s string) { notes = append(notes, s) }) // 10 lines of 10 bytes each
	for i := range 45 {
		l.Line(fmt.Sprintf("line %04d", i))
	}
	l.Close()
	read := func(name string) []string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	lines := func(from, to int) []string {
		var out []string
		for i := from; i < to; i++ {
			out = append(out, fmt.Sprintf("line %04d", i))
		}
		return out
	}
	moved := "[selmix: worker.log keeps the first 100 bytes of the worker's stderr; the rest goes to worker.tail.log, which keeps the last 100 bytes to 200 bytes]"
	for _, c := range []struct {
		file string
		want []string
	}{
		{"worker.log", append(lines(0, 10), moved)},
		{"worker.tail.log.1", lines(30, 40)},
		{"worker.tail.log", lines(40, 45)},
	} {
		if got := read(c.file); strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s:\n got %q\nwant %q", c.file, got, c.want)
		}
	}
	// Lines 10 to 19, then 20 to 29, were dropped as the tail turned over.
	dropped := "[selmix: 10 earlier lines of the worker's stderr were dropped from its log (worker.log keeps the first 100 bytes, worker.tail.log and worker.tail.log.1 the last 100 bytes to 200 bytes)]"
	if len(notes) != 3 || notes[0] != moved || notes[1] != dropped || notes[2] != dropped {
		t.Errorf("notes: %q", notes)
	}

	// Reopened (a resumed run), it goes on where the files stand.
	l = OpenWorkerLog(dir, 100, 100, func(s string) { notes = append(notes, s) })
	for i := 45; i < 52; i++ {
		l.Line(fmt.Sprintf("line %04d", i))
	}
	l.Close()
	if got := read("worker.tail.log"); strings.Join(got, "|") != strings.Join(lines(50, 52), "|") {
		t.Errorf("after resuming, worker.tail.log: %q", got)
	}
	if got := read("worker.tail.log.1"); strings.Join(got, "|") != strings.Join(lines(40, 50), "|") {
		t.Errorf("after resuming, worker.tail.log.1: %q", got)
	}
	if len(notes) != 4 || !strings.HasPrefix(notes[3], "[selmix: earlier lines of the worker's stderr were dropped") {
		t.Errorf("notes after resuming: %q", notes)
	}
}

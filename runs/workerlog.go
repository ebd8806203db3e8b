package runs

import (
	"fmt"
	"os"
	"path/filepath"
)

// A worker's stderr is kept in its run's folder, bounded: worker.log holds
// the first WorkerLogHead bytes; the lines after go to worker.tail.log,
// which becomes worker.tail.log.1 (replacing the one before) whenever it
// reaches WorkerLogTail bytes. So the first 8 MiB and the last 8 to 16 MiB
// of what a worker writes are kept (docs/run-format.md).
const (
	WorkerLogName  = "worker.log"
	WorkerTailName = "worker.tail.log"
	WorkerLogHead  = 8 << 20
	WorkerLogTail  = 8 << 20
)

// WorkerLog writes a worker's stderr lines into a run's folder and tells
// viewers (note) when lines move to the tail or are dropped.
type WorkerLog struct {
	dir          string
	headMax      int64
	tailMax      int64
	note         func(string)
	head, tail   *os.File
	headN, tailN int64
	tailLines    int  // lines in worker.tail.log, -1 if it predates us
	prevLines    int  // lines in worker.tail.log.1, -1 if it predates us
	full         bool // worker.log has reached headMax
}

// OpenWorkerLog opens the log in dir with the given bounds (WorkerLogHead
// and WorkerLogTail), going on where its files stand (a resumed run).
func OpenWorkerLog(dir string, headMax, tailMax int64, note func(string)) *WorkerLog {
	l := &WorkerLog{dir: dir, headMax: headMax, tailMax: tailMax, note: note}
	l.head, l.headN = openAppend(filepath.Join(dir, WorkerLogName))
	l.full = l.headN >= l.headMax
	if l.tail, l.tailN = openAppend(filepath.Join(dir, WorkerTailName)); l.tailN > 0 {
		l.tailLines = -1
	}
	if _, err := os.Stat(filepath.Join(dir, WorkerTailName+".1")); err == nil {
		l.prevLines = -1
	}
	return l
}

// sizeText is n bytes for people: "8 MiB", "100 bytes".
func sizeText(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// openAppend opens path for appending and returns its size; nil if it
// cannot (the log is then not kept, and the run goes on).
func openAppend(path string) (*os.File, int64) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, 0
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0
	}
	return f, fi.Size()
}

// Line writes one line of the worker's stderr.
func (l *WorkerLog) Line(s string) {
	n := int64(len(s) + 1)
	if !l.full && l.headN+n <= l.headMax {
		if l.head != nil {
			fmt.Fprintln(l.head, s)
		}
		l.headN += n
		return
	}
	if !l.full {
		l.full = true
		msg := fmt.Sprintf("[selmix: %s keeps the first %s of the worker's stderr; the rest goes to %s, which keeps the last %s to %s]",
			WorkerLogName, sizeText(l.headMax), WorkerTailName, sizeText(l.tailMax), sizeText(2*l.tailMax))
		if l.head != nil {
			fmt.Fprintln(l.head, msg)
		}
		l.note(msg)
	}
	if l.tailN+n > l.tailMax && l.tailN > 0 {
		l.rotate()
	}
	if l.tail != nil {
		fmt.Fprintln(l.tail, s)
	}
	l.tailN += n
	if l.tailLines >= 0 {
		l.tailLines++
	}
}

// rotate makes worker.tail.log worker.tail.log.1, dropping the one before.
func (l *WorkerLog) rotate() {
	if l.prevLines != 0 {
		what := "earlier lines"
		if l.prevLines > 0 {
			what = fmt.Sprintf("%d earlier lines", l.prevLines)
		}
		l.note(fmt.Sprintf("[selmix: %s of the worker's stderr were dropped from its log (%s keeps the first %s, %s and %s.1 the last %s to %s)]",
			what, WorkerLogName, sizeText(l.headMax), WorkerTailName, WorkerTailName, sizeText(l.tailMax), sizeText(2*l.tailMax)))
	}
	if l.tail != nil {
		l.tail.Close()
	}
	path := filepath.Join(l.dir, WorkerTailName)
	os.Rename(path, path+".1")
	l.prevLines = l.tailLines
	l.tail, _ = openAppend(path)
	l.tailN, l.tailLines = 0, 0
}

// Close closes the log's files.
func (l *WorkerLog) Close() {
	for _, f := range []*os.File{l.head, l.tail} {
		if f != nil {
			f.Close()
		}
	}
}

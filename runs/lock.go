package runs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"selmix/internal/boundedfile"
)

const lockName = "lock"

// lockRetries and lockRetryWait bound how long a writer waits out a reader's
// momentary LOCK_SH probe (see IsLive) before calling the run busy.
const (
	lockRetries   = 5
	lockRetryWait = 10 * time.Millisecond
)

// BusyError reports a run that another process is writing.
type BusyError struct {
	ID  string
	Pid int // 0 if unknown
}

// ExitCode is 2: a run another process writes is not one a command can
// act on (resume, rm), whichever of them finds it busy first.
func (e *BusyError) ExitCode() int { return 2 }

func (e *BusyError) Error() string {
	if e.Pid == 0 {
		return fmt.Sprintf("run %s is being written by another process", e.ID)
	}
	return fmt.Sprintf("run %s is being written by pid %d", e.ID, e.Pid)
}

// acquireLock takes the exclusive writer lock of run dir and writes our pid
// into it. The returned file holds the lock until closed.
func acquireLock(dir, id string) (*os.File, error) {
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("run %s: open lock: %w", id, err)
	}
	for i := 0; ; i++ {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("run %s: lock %s: %w", id, path, err)
		}
		if i == lockRetries {
			f.Close()
			return nil, &BusyError{ID: id, Pid: readPid(path)}
		}
		time.Sleep(lockRetryWait)
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, fmt.Errorf("run %s: write lock: %w", id, err)
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("run %s: write lock: %w", id, err)
	}
	return f, nil
}

// releaseLock clears the pid and drops the lock.
func releaseLock(f *os.File) error {
	f.Truncate(0) // best effort: the flock, not the pid, says who is live
	return f.Close()
}

// readPid reads the pid from a lock file; 0 if absent or unreadable.
func readPid(path string) int {
	b, err := boundedfile.ReadFile(path, lockFile)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid < 0 {
		return 0
	}
	return pid
}

// IsLive reports whether a writer holds the lock of the run in dir, and its
// pid (0 if unknown). It tries LOCK_SH|LOCK_NB on its own read-only
// descriptor of the lock file and releases it at once: only a live
// writer's LOCK_EX makes that fail. It never creates or modifies a file.
func IsLive(dir string) (bool, int) {
	path := filepath.Join(dir, lockName)
	f, _, err := boundedfile.Open(path, lockFile) // not a FIFO some user left there
	if err != nil {
		return false, 0
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	if err == nil {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return false, 0
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, readPid(path)
	}
	return false, 0
}

// LockDir takes the writer lock of dir (created if needed) the way a run's
// writer does, for other things that must have one owner at a time (a
// sweep member, a sweep's executor); IsLive(dir) probes it. name is used
// in errors; a held lock is a *BusyError. Close the file to release it.
func LockDir(dir, name string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return acquireLock(dir, name)
}

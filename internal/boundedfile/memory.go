package boundedfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// ErrNoMemory is wrapped by the error for data that would not fit in the
// memory this process may still take.
var ErrNoMemory = errors.New("does not fit in memory")

// MemoryError is data refused before it is allocated, because it would
// not fit in what Headroom says is left.
type MemoryError struct {
	What  string // the data, as errors name it
	Need  int64  // bytes it takes
	Have  int64  // bytes left
	Limit string // what bounds it: "ulimit -v 4000000"
}

func (e *MemoryError) Error() string {
	return fmt.Sprintf("%s takes %s, more than the %s this process may still allocate (%s)", e.What, Bytes(e.Need), Bytes(e.Have), e.Limit)
}

func (e *MemoryError) Unwrap() error { return ErrNoMemory }

// Bytes writes n as people read sizes: "2.4 GB", "512 KB", "17 bytes".
func Bytes(n int64) string {
	switch {
	case n >= 1e9:
		return strconv.FormatFloat(float64(n)/1e9, 'f', 1, 64) + " GB"
	case n >= 1e6:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + " MB"
	case n >= 1e3:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64) + " KB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// allocSlack is what an allocation needs beyond its own size (the Go
// runtime maps its heap in arenas of 64 MiB and keeps metadata beside).
const allocSlack = 64 << 20

// CheckAlloc returns a *MemoryError if n bytes for what would not fit in
// Headroom: a file can declare an array of any size that is really there
// (a 2 MB .npz inflates to 2.4 GB of zeros), and under a limit on the
// address space (Slurm's --mem, ulimit -v) allocating it would end the
// process with the Go runtime's "fatal error: out of memory" rather than
// a line saying what was too large.
func CheckAlloc(what string, n int64) error {
	have, limit := Headroom()
	if have >= 0 && n+allocSlack > have {
		return &MemoryError{What: what, Need: n, Have: max(have-allocSlack, 0), Limit: limit}
	}
	return nil
}

// unlimited is RLIM_INFINITY as Getrlimit returns it.
const unlimited = ^uint64(0)

// Headroom is how many more bytes this process may map, and what bounds
// it: the lesser of its address-space limit (RLIMIT_AS, ulimit -v) less
// what it has mapped and its data limit (RLIMIT_DATA) less its data. It is
// -1 when neither is set. (A cgroup's memory.max is not counted: its
// usage includes page cache the kernel gives back, and exceeding it ends
// in the OOM killer, not in the runtime's crash.)
func Headroom() (int64, string) {
	have, limit := int64(-1), ""
	take := func(n int64, what string) {
		if n < 0 {
			n = 0
		}
		if have < 0 || n < have {
			have, limit = n, what
		}
	}
	vm, data := statm()
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_AS, &rl) == nil && rl.Cur != unlimited && vm >= 0 {
		take(int64(rl.Cur)-vm, fmt.Sprintf("ulimit -v %d", rl.Cur>>10))
	}
	if syscall.Getrlimit(syscall.RLIMIT_DATA, &rl) == nil && rl.Cur != unlimited && data >= 0 {
		take(int64(rl.Cur)-data, fmt.Sprintf("ulimit -d %d", rl.Cur>>10))
	}
	return have, limit
}

// statm returns the bytes this process has mapped and its data segment
// (-1 where unknown).
func statm() (vm, data int64) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return -1, -1
	}
	f := bytes.Fields(b)
	if len(f) < 6 {
		return -1, -1
	}
	page := int64(os.Getpagesize())
	v, err1 := strconv.ParseInt(string(f[0]), 10, 64)
	d, err2 := strconv.ParseInt(string(f[5]), 10, 64)
	if err1 != nil || err2 != nil {
		return -1, -1
	}
	return v * page, d * page
}

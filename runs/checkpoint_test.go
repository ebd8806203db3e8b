package runs

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// sizedCheck is a checkpoint format for tests: the first 8 bytes are the
// file's size in decimal, the rest "ok".
var sizedCheck = CheckpointCheck{
	Head: func(r io.Reader, size int64) error {
		var b [8]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return err
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b[:])), 10, 64)
		if err != nil || n != size {
			return fmt.Errorf("%d bytes, its header declares %s", size, b[:])
		}
		return nil
	},
	Content: func(b []byte) error {
		if string(b[8:]) != "ok" {
			return fmt.Errorf("content %q", b[8:])
		}
		return nil
	},
}

// The newest checkpoint grown to a 5 GB sparse file, and one whose
// content is refused, are passed over for the one before without being
// read whole (reading it died with "out of memory" under the 4 GB of the
// README's Slurm example); a best checkpoint refused is damage.
func TestLatestValidCheckpointPassesOver(t *testing.T) {
	root := t.TempDir()
	w := mustCreate(t, root, "ckpt", Meta{})
	defer w.Close()
	good := []byte("10      ok")
	for _, s := range []struct {
		step int
		b    []byte
	}{{10, good}, {20, []byte("10      no")}, {30, good}} {
		if err := w.WriteCheckpoint(s.step, s.b); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteBestCheckpoint(20, []byte("10      no")); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(w.Dir(), ckptDirName, ckptName(30)), 5<<30); err != nil {
		t.Skip("no sparse 5 GB file here:", err)
	}
	r, err := Open(root, "ckpt")
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	step, b, skipped, err := r.LatestValidCheckpoint(1<<40, sizedCheck)
	runtime.ReadMemStats(&after)
	if err != nil || step != 10 || string(b) != string(good) {
		t.Fatalf("LatestValidCheckpoint = %d, %q, %v; want 10", step, b, err)
	}
	if len(skipped) != 2 || skipped[0].Step != 30 || !strings.Contains(skipped[0].Err.Error(), "5368709120 bytes, its header declares 10") ||
		skipped[1].Step != 20 || !strings.Contains(skipped[1].Err.Error(), `content "no"`) {
		t.Errorf("skipped %v, want 30 (its size) then 20 (its content)", skipped)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
		t.Errorf("reading them allocated %d MiB, want at most 64", got>>20)
	}
	if _, _, err := r.ValidBestCheckpoint(sizedCheck); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "best-0000020.ckpt") {
		t.Errorf("best checkpoint refused by its content: error %v, want damage naming it", err)
	}
	if _, _, _, err := r.LatestValidCheckpoint(15, CheckpointCheck{Head: sizedCheck.Head, Content: func([]byte) error { return errors.New("no") }}); !errors.Is(err, ErrDamaged) {
		t.Errorf("none valid: error %v, want damage", err)
	}
}

// A run with no checkpoint yet (a live run forked early) says so, not
// "no checkpoint at or before step 9223372036854775807".
func TestNoCheckpointYet(t *testing.T) {
	root := t.TempDir()
	w := mustCreate(t, root, "young", Meta{})
	defer w.Close()
	r, err := Open(root, "young")
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, err = r.LatestValidCheckpoint(math.MaxInt, sizedCheck)
	if !errors.Is(err, ErrNoCheckpoint) || err.Error() != "run "+w.ID()+" has no checkpoint yet (one is taken every record.checkpoint_every refreshes and when it stops)" {
		t.Errorf("error %v", err)
	}
}

// A checkpoint (or an arrays.bin record) larger than the memory left is
// refused in one line before it is allocated, not passed over for an
// older one: it is not damaged. The child process lowers its own
// RLIMIT_AS to what it has mapped plus 256 MiB.
func TestCheckpointLargerThanMemory(t *testing.T) {
	if dir := os.Getenv("SELMIX_RUNS_MEMCHILD"); dir != "" {
		b, _ := os.ReadFile("/proc/self/statm")
		var pages uint64
		for _, c := range b {
			if c < '0' || c > '9' {
				break
			}
			pages = pages*10 + uint64(c-'0')
		}
		lim := pages*uint64(os.Getpagesize()) + 256<<20
		if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: lim, Max: lim}); err != nil {
			os.Exit(3)
		}
		r, err := Open(filepath.Dir(dir), filepath.Base(dir))
		if err != nil {
			os.Exit(3)
		}
		_, _, skipped, err := r.LatestValidCheckpoint(1<<40, CheckpointCheck{})
		println("skipped", len(skipped), "error:", err.Error())
		os.Exit(0)
	}
	root := t.TempDir()
	w := mustCreate(t, root, "big", Meta{})
	for _, step := range []int{10, 20} {
		if err := w.WriteCheckpoint(step, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	big := filepath.Join(w.Dir(), ckptDirName, ckptName(20))
	if err := os.Truncate(big, 1<<30); err != nil {
		t.Skip("no sparse 1 GiB file here:", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCheckpointLargerThanMemory$")
	cmd.Env = append(os.Environ(), "SELMIX_RUNS_MEMCHILD="+w.Dir())
	out, err := cmd.CombinedOutput()
	if want := "skipped 0 error: " + big + " takes 1.1 GB, more than the "; err != nil || !strings.Contains(string(out), want) {
		t.Errorf("child: %v\n%.2000s\nwant %q", err, out, want)
	}
}

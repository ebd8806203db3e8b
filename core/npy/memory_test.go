package npy

import (
	"archive/zip"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"selmix/core/npy/npytest"
	"selmix/internal/boundedfile"
)

// memChild names the archive TestArrayLargerThanMemory's child reads.
const memChild = "SELMIX_NPY_MEMCHILD"

// An array that is really in its archive (a deflated member that inflates
// to 400 MB of zeros from 0.4 MB) but does not fit in the address space
// the process may still take is refused with one line before it is
// allocated: allocating it ended the process with "fatal error: out of
// memory" and a goroutine dump (a 2 MB .npz as data.train under the 4 GB
// of the README's Slurm example). The child process lowers its own
// RLIMIT_AS to what it has mapped plus 256 MiB, then reads the array.
func TestArrayLargerThanMemory(t *testing.T) {
	if path := os.Getenv(memChild); path != "" {
		memoryChild(path)
		return
	}
	path := filepath.Join(t.TempDir(), "bomb.npz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	const rows, cols = 20000, 5000 // float32: 400 MB
	writeZerosMember(t, f, "x.npy", rawNPY("{'descr': '<f4', 'fortran_order': False, 'shape': (20000, 5000), }", nil), rows*cols*4)
	f.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestArrayLargerThanMemory$")
	cmd.Env = append(os.Environ(), memChild+"="+path)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "refused: "+path+`: member "x.npy": a (20000, 5000) <f4 array takes 400.0 MB, more than the`) {
		t.Fatalf("child: %v\n%.2000s", err, out)
	}
}

// writeZerosMember writes a zip at w whose one deflated member, name, is
// hdr and then n zero bytes.
func writeZerosMember(t *testing.T, w io.Writer, name string, hdr []byte, n int) {
	t.Helper()
	zw := zip.NewWriter(w)
	if err := npytest.WriteZeros(zw, name, hdr, n); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}

// memoryChild reads array x of the archive at path with an address space
// 256 MiB larger than what it has mapped, and says how that ended.
func memoryChild(path string) {
	b, _ := os.ReadFile("/proc/self/statm")
	var pages int64
	for _, c := range b {
		if c < '0' || c > '9' {
			break
		}
		pages = pages*10 + int64(c-'0')
	}
	lim := uint64(pages*int64(os.Getpagesize())) + 256<<20
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: lim, Max: lim}); err != nil {
		println("setrlimit:", err.Error())
		os.Exit(3)
	}
	z, err := OpenNPZ(path)
	if err != nil {
		println("open:", err.Error())
		os.Exit(3)
	}
	a, err := z.Open("x")
	if errors.Is(err, boundedfile.ErrNoMemory) {
		println("refused: " + err.Error())
		os.Exit(0)
	}
	if err != nil {
		println("error:", err.Error())
		os.Exit(3)
	}
	v := make([]float32, a.Len()) // what a reader does next
	err = a.ReadFloat32(v)
	println("read it:", err, binary.Size(v))
	os.Exit(3)
}

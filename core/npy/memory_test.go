package npy

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

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
// hdr and then n zero bytes. Deflating hundreds of MB takes seconds (tens
// under the race detector), so the member is put together from deflate
// blocks: once the window holds only zeros, a flushed MiB of zeros
// compresses to the same bytes every time, and those are repeated.
func writeZerosMember(t *testing.T, w io.Writer, name string, hdr []byte, n int) {
	t.Helper()
	const chunk = 1 << 20
	zeros := make([]byte, chunk)
	var c bytes.Buffer
	fw, _ := flate.NewWriter(&c, flate.BestSpeed)
	fw.Write(hdr)
	first := min(n, chunk)
	fw.Write(zeros[:first]) // the first MiB may refer to the header
	fw.Flush()
	left := n - first
	var steady []byte
	if left >= chunk {
		before := c.Len()
		fw.Write(zeros)
		fw.Flush()
		steady = bytes.Clone(c.Bytes()[before:])
		left -= chunk
	}
	head := bytes.Clone(c.Bytes())
	c.Reset()
	repeat := left / chunk
	fw.Write(zeros[:left%chunk]) // the window is zeros here as after the repeats
	fw.Close()
	crc := crc32.Update(0, crc32.IEEETable, hdr)
	for k := n; k > 0; k -= chunk {
		crc = crc32.Update(crc, crc32.IEEETable, zeros[:min(k, chunk)])
	}
	zw := zip.NewWriter(w)
	mw, err := zw.CreateRaw(&zip.FileHeader{Name: name, Method: zip.Deflate, CRC32: crc,
		CompressedSize64: uint64(len(head) + repeat*len(steady) + c.Len()), UncompressedSize64: uint64(len(hdr) + n)})
	if err != nil {
		t.Fatal(err)
	}
	mw.Write(head)
	for range repeat {
		mw.Write(steady)
	}
	mw.Write(c.Bytes())
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

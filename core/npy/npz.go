package npy

import (
	"archive/zip"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"sort"
	"strings"
)

// NPZ is an opened .npz archive (numpy.savez or numpy.savez_compressed):
// a zip of .npy members, one per array, named "<key>.npy".
type NPZ struct {
	name    string
	size    int64
	members map[string]*zip.File
	keys    []string
	closer  io.Closer
}

// OpenNPZ opens the archive at path.
func OpenNPZ(path string) (*NPZ, error) {
	z, f, err := openWith(path, func(f *os.File, size int64) (*NPZ, error) { return NewNPZ(path, f, size) })
	if err != nil {
		return nil, err
	}
	z.closer = f
	return z, nil
}

// NewNPZ reads the directory of an archive of size bytes; name prefixes
// errors.
func NewNPZ(name string, r io.ReaderAt, size int64) (z *NPZ, err error) {
	defer guard(name, &err)
	zr, err := zip.NewReader(r, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) { // nothing is extracted to disk
		return nil, fmt.Errorf("%s: not an .npz archive: %v", name, err)
	}
	z = &NPZ{name: name, size: size, members: make(map[string]*zip.File, len(zr.File))}
	for _, e := range zr.File {
		k := strings.TrimSuffix(e.Name, ".npy")
		if _, dup := z.members[k]; dup {
			return nil, fmt.Errorf("%s: array %q appears twice", name, k)
		}
		z.members[k] = e
		z.keys = append(z.keys, k)
	}
	sort.Strings(z.keys)
	return z, nil
}

// Name is the name errors start with (the path, for OpenNPZ).
func (z *NPZ) Name() string { return z.name }

// Close releases the underlying file, if any.
func (z *NPZ) Close() error {
	if z.closer == nil {
		return nil
	}
	return z.closer.Close()
}

// Keys lists the array names, sorted, without the ".npy" suffix.
func (z *NPZ) Keys() []string { return append([]string(nil), z.keys...) }

// Has reports whether the archive holds array key.
func (z *NPZ) Has(key string) bool { _, ok := z.members[key]; return ok }

// Errorf returns an error naming the archive and the member of array key.
func (z *NPZ) Errorf(key, format string, args ...any) error {
	m := key + ".npy"
	if e, ok := z.members[key]; ok {
		m = e.Name
	}
	return fmt.Errorf("%s: member %q: %w", z.name, m, fmt.Errorf(format, args...))
}

// maxDeflateRatio bounds how much deflate can expand: at most 258 bytes
// per 2-bit code, about 1032:1. A member whose recorded size exceeds that
// is corrupt, and is refused before its size is allocated.
const maxDeflateRatio = 1032

// Open reads the header of array key. The array's data is read to the
// member's end, so that archive/zip checks its size and CRC-32.
func (z *NPZ) Open(key string) (a *Array, err error) {
	e, ok := z.members[key]
	if !ok {
		has := strings.Join(z.keys, ", ")
		if has == "" {
			has = "nothing"
		}
		return nil, fmt.Errorf("%s: missing array %q (the archive holds %s)", z.name, key, has)
	}
	where := fmt.Sprintf("%s: member %q", z.name, e.Name)
	defer guard(where, &err)
	fail := func(format string, args ...any) (*Array, error) {
		return nil, fmt.Errorf("%s: %s", where, fmt.Sprintf(format, args...))
	}
	if e.Flags&1 != 0 {
		return fail("encrypted members are not supported")
	}
	usize, csize := e.UncompressedSize64, e.CompressedSize64
	switch e.Method {
	case zip.Store:
		if usize != csize {
			return fail("recorded sizes disagree (%d stored, %d uncompressed): file is corrupted", csize, usize)
		}
	case zip.Deflate:
		if usize/maxDeflateRatio > csize+1 {
			return fail("%d uncompressed bytes cannot come from %d compressed ones: file is corrupted", usize, csize)
		}
	default:
		return fail("compression method %d is not supported (numpy writes stored or deflated members)", e.Method)
	}
	off, err := e.DataOffset()
	if err != nil {
		return fail("%v", err)
	}
	if csize > uint64(z.size) || off < 0 || off > z.size-int64(csize) {
		return fail("member data runs past the end of the archive (file is truncated or corrupted)")
	}
	rc, err := e.Open()
	if err != nil {
		return fail("%v", err)
	}
	cr := &crcReader{r: rc, h: crc32.NewIEEE()}
	// corrupted reports whether the member fails its CRC-32 check, read
	// to the end: the better explanation of a header or a value that
	// makes no sense.
	corrupted := func() (bad bool) {
		defer func() {
			if recover() != nil { // a decoder panicking on this member
				bad = true
			}
		}()
		_, err := io.Copy(io.Discard, cr)
		return errors.Is(err, zip.ErrChecksum) || err == nil && cr.h.Sum32() != e.CRC32
	}
	a, err = readHeader(where, cr, int64(usize))
	if err != nil {
		if corrupted() {
			err = fmt.Errorf("%s: CRC-32 mismatch (file is corrupted)", where)
		}
		rc.Close()
		return nil, err
	}
	a.close = rc.Close
	a.corrupted = corrupted
	a.end = func() error {
		// Reading past the data makes archive/zip verify the size and,
		// unless the recorded CRC-32 is 0, the checksum; ours covers 0 too.
		var one [1]byte
		for {
			n, err := cr.Read(one[:])
			if n > 0 {
				return zip.ErrFormat
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
		}
		if cr.h.Sum32() != e.CRC32 {
			return zip.ErrChecksum
		}
		return nil
	}
	return a, nil
}

// crcReader computes the CRC-32 of what it reads.
type crcReader struct {
	r io.Reader
	h hash.Hash32
}

func (c *crcReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.h.Write(p[:n])
	return n, err
}

// Float64s reads array key, which must be float64 (<f8) of the shape want
// gives (-1: any; CheckShape), and returns its data and shape.
func (z *NPZ) Float64s(key string, want ...int) ([]float64, []int, error) {
	a, err := z.Open(key)
	if err != nil {
		return nil, nil, err
	}
	defer a.Close()
	if a.DType.Kind != Float || a.DType.Size != 8 {
		return nil, nil, a.Errorf("expected dtype float64 (<f8), got %s", a.DType)
	}
	if err := a.CheckShape(want...); err != nil {
		return nil, nil, err
	}
	v := make([]float64, a.Len())
	if err := a.ReadFloat64(v); err != nil {
		return nil, nil, err
	}
	return v, a.Shape, nil
}

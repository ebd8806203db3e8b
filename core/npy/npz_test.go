package npy

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// readXYNames reads gen.py's archive: x (5×3 float32), y (5 int64) and
// names (3 unicode strings).
func readXYNames(z *NPZ) (x []float32, y []int, names []string, err error) {
	x, err = openMember(z, "x", func(a *Array) ([]float32, error) {
		if err := a.CheckShape(5, 3); err != nil {
			return nil, err
		}
		return readAs(a, (*Array).ReadFloat32)
	})
	if err != nil {
		return nil, nil, nil, err
	}
	y, err = openMember(z, "y", func(a *Array) ([]int, error) { return readAs(a, (*Array).ReadInt) })
	if err != nil {
		return nil, nil, nil, err
	}
	names, err = openMember(z, "names", (*Array).ReadStrings)
	return x, y, names, err
}

// openMember opens the archive's member name and reads it with read.
func openMember[T any](z *NPZ, name string, read func(*Array) ([]T, error)) ([]T, error) {
	a, err := z.Open(name)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	return read(a)
}

// readAs reads all of a with a typed reader.
func readAs[T any](a *Array, read func(*Array, []T) error) ([]T, error) {
	v := make([]T, a.Len())
	if err := read(a, v); err != nil {
		return nil, err
	}
	return v, nil
}

// numpy.savez and numpy.savez_compressed archives read back as written.
func TestReadNPZ(t *testing.T) {
	for _, file := range []string{"savez.npz", "savez_compressed.npz"} {
		z, err := OpenNPZ(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		if got := z.Keys(); !slices.Equal(got, []string{"names", "x", "y"}) {
			t.Errorf("%s: keys %v", file, got)
		}
		x, y, names, err := readXYNames(z)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for i, v := range grid(15) {
			if x[i] != float32(v) {
				t.Fatalf("%s: x[%d] = %v, want %v", file, i, x[i], v)
			}
		}
		if !slices.Equal(y, []int{0, 1, 2, 1, 0}) || !slices.Equal(names, []string{"zero", "one", "two"}) {
			t.Errorf("%s: y=%v names=%q", file, y, names)
		}
		if _, err := z.Open("z"); err == nil || !strings.HasSuffix(err.Error(), `savez`+strings.TrimPrefix(file, "savez")+`: missing array "z" (the archive holds names, x, y)`) {
			t.Errorf("%s: missing key: %v", file, err)
		}
		z.Close()
	}
}

// dataOffset is where member name's data starts in archive b.
func dataOffset(t *testing.T, b []byte, name string) (int64, *zip.File) {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		if f.Name == name {
			off, err := f.DataOffset()
			if err != nil {
				t.Fatal(err)
			}
			return off, f
		}
	}
	t.Fatalf("no member %s", name)
	return 0, nil
}

// A flipped byte inside a stored member is refused (it used to be read as
// a wrong number): by archive/zip's CRC-32 check, and by ours when the
// recorded CRC-32 is 0, which archive/zip does not check.
func TestCorruptMembers(t *testing.T) {
	orig := fixture(t, "savez.npz")
	off, f := dataOffset(t, orig, "x.npy")
	flip := func(b []byte, at int64) []byte {
		b = slices.Clone(b)
		b[at] ^= 0x10
		return b
	}
	// Zero the CRC-32 in the local header and the central directory.
	zeroCRC := func(b []byte) []byte {
		b = slices.Clone(b)
		local := bytes.LastIndex(b[:off], []byte("PK\x03\x04"))
		for _, i := range []int{local + 14, bytes.Index(b, []byte("PK\x01\x02")) + 16} {
			if binary.LittleEndian.Uint32(b[i:]) != f.CRC32 {
				t.Fatalf("no CRC-32 at %d", i)
			}
			binary.LittleEndian.PutUint32(b[i:], 0)
		}
		return b
	}
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"flipped data byte", flip(orig, off+int64(f.UncompressedSize64)-1), `c.npz: member "x.npy": CRC-32 mismatch (file is corrupted)`},
		{"flipped byte, CRC-32 zeroed", zeroCRC(flip(orig, off+int64(f.UncompressedSize64)-1)), `c.npz: member "x.npy": CRC-32 mismatch (file is corrupted)`},
		{"flipped header byte (shape 5 → 4)", func() []byte {
			b := slices.Clone(orig)
			i := bytes.Index(b, []byte("(5, 3)"))
			b[i+1] = '4'
			return b
		}(), `c.npz: member "x.npy": CRC-32 mismatch (file is corrupted)`},
		{"flipped header byte (<f4 → <i4, a valid header)", func() []byte {
			b := slices.Clone(orig)
			i := bytes.Index(b, []byte("'<f4'"))
			b[i+2] = 'i'
			return b
		}(), `c.npz: member "x.npy": CRC-32 mismatch (file is corrupted)`},
	}
	for _, c := range cases {
		z := npzBytes(t, "c.npz", c.b)
		_, _, _, err := readXYNames(z)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: err = %v\nwant %s", c.name, err, c.want)
		}
	}
	// Compressed: a flipped byte breaks the deflate stream or the CRC-32.
	comp := fixture(t, "savez_compressed.npz")
	coff, cf := dataOffset(t, comp, "x.npy")
	for at := coff; at < coff+int64(cf.CompressedSize64); at++ {
		z := npzBytes(t, "c.npz", flip(comp, at))
		_, _, _, err := readXYNames(z)
		if err == nil {
			t.Fatalf("flipped compressed byte %d: no error", at-coff)
		}
		if !strings.HasPrefix(err.Error(), `c.npz: member "x.npy": `) {
			t.Fatalf("flipped compressed byte %d: %v", at-coff, err)
		}
	}
}

// Archive-level damage: truncation, lying sizes, unsupported members.
func TestHostileArchives(t *testing.T) {
	good := rawNPY("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", make([]byte, 16))
	stored := rawNPZ(t, member{name: "C.npy", data: good})
	off, f := dataOffset(t, stored, "C.npy")
	cdir := bytes.Index(stored, []byte("PK\x01\x02"))
	setU32 := func(b []byte, at int, v uint32) []byte {
		b = slices.Clone(b)
		binary.LittleEndian.PutUint32(b[at:], v)
		return b
	}
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"not a zip", []byte("hello"), "c.npz: not an .npz archive"},
		{"truncated archive", stored[:len(stored)-10], "c.npz: not an .npz archive"},
		{"issue repro: malformed header", rawNPZ(t, member{name: "C.npy", data: []byte("\x93NUMPY\x01\x00\x00\x00")}), `c.npz: member "C.npy": malformed header`},
		{"stored sizes disagree", setU32(stored, cdir+24, uint32(f.UncompressedSize64)+8), `c.npz: member "C.npy": recorded sizes disagree`},
		{"stored past the end", setU32(setU32(stored, cdir+20, 1<<20), cdir+24, 1<<20), `c.npz: member "C.npy": member data runs past the end`},
		{"deflate claims 2 GB", func() []byte {
			b := rawNPZ(t, member{name: "C.npy", data: good, deflate: true})
			return setU32(b, bytes.Index(b, []byte("PK\x01\x02"))+24, 1<<31)
		}(), `c.npz: member "C.npy": 2147483648 uncompressed bytes cannot come from`},
		{"method 12 (bzip2)", func() []byte {
			b := slices.Clone(stored)
			binary.LittleEndian.PutUint16(b[cdir+10:], 12)
			return b
		}(), "compression method 12 is not supported"},
		{"encrypted", func() []byte {
			b := slices.Clone(stored)
			binary.LittleEndian.PutUint16(b[cdir+8:], 1)
			return b
		}(), "encrypted"},
		{"data descriptor lies", setU32(stored, int(off)+len(good)+4, crc32.ChecksumIEEE(good)+1), ""},
	}
	for _, c := range cases {
		z, err := NewNPZ("c.npz", bytes.NewReader(c.b), int64(len(c.b)))
		if err == nil {
			var a *Array
			if a, err = z.Open("C"); err == nil {
				err = a.ReadFloat64(make([]float64, a.Len()))
			}
		}
		if c.want == "" {
			continue // only: no panic
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
	// Two members for one key.
	b := rawNPZ(t, member{name: "C.npy", data: good}, member{name: "C", data: good})
	if _, err := NewNPZ("c.npz", bytes.NewReader(b), int64(len(b))); err == nil || !strings.Contains(err.Error(), `array "C" appears twice`) {
		t.Errorf("duplicate: %v", err)
	}
}

func TestOpenNPZMissingFile(t *testing.T) {
	_, err := OpenNPZ(filepath.Join(t.TempDir(), "nope.npz"))
	if !os.IsNotExist(err) || !strings.Contains(err.Error(), "nope.npz") {
		t.Errorf("err = %v", err)
	}
}

// Float64s reads a float64 member of the shape asked for, and refuses
// another dtype or shape naming the member.
func TestFloat64s(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.npz")
	err := WriteNPZ(path,
		Entry{Name: "a", Shape: []int{2, 3}, Data: []float64{1, 2, 3, 4, 5, 6}},
		Entry{Name: "s", Shape: []int{2}, Data: []float32{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	z, err := OpenNPZ(path)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	v, shape, err := z.Float64s("a", 2, -1)
	if err != nil || !slices.Equal(v, []float64{1, 2, 3, 4, 5, 6}) || !slices.Equal(shape, []int{2, 3}) {
		t.Errorf("a: %v %v %v", v, shape, err)
	}
	for _, c := range []struct {
		name, key string
		want      []int
		err       string
	}{
		{"shape", "a", []int{3, 2}, `member "a.npy": expected shape (3, 2), got (2, 3)`},
		{"dtype", "s", []int{2}, `member "s.npy": expected dtype float64 (<f8), got`},
		{"missing", "x", nil, `missing array "x"`},
	} {
		if _, _, err := z.Float64s(c.key, c.want...); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.err)
		}
	}
}

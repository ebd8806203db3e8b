package data

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"sort"
	"strings"

	"github.com/sbinet/npyio/npy"
)

// array is one NumPy array decoded by npyio, in C order, widened to either
// float64 (float dtypes) or int64 (integer dtypes).
type array struct {
	shape []int
	dtype string
	f     []float64 // set for f4/f8
	i     []int64   // set for integer dtypes
}

func (a *array) shapeString() string {
	parts := make([]string, len(a.shape))
	for i, d := range a.shape {
		parts[i] = fmt.Sprint(d)
	}
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// fullReader makes every Read fill its buffer (npyio reads element by
// element with plain Read calls and ignores io.EOF), and remembers whether
// the data ended early so truncation cannot pass silently.
type fullReader struct {
	r         io.Reader
	n         int64 // bytes delivered
	truncated bool
}

func (f *fullReader) Read(p []byte) (int, error) {
	n, err := io.ReadFull(f.r, p)
	f.n += int64(n)
	if err != nil {
		f.truncated = true
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return n, err
		}
	}
	return n, err
}

// readNPY decodes one .npy stream of size bytes with npyio, after checking
// the header fields that npyio trusts blindly (header length, shape, data
// size) so that a corrupt file is an error rather than a panic or a huge
// allocation.
func readNPY(r io.Reader, size int64) (a *array, err error) {
	br := bufio.NewReaderSize(io.LimitReader(r, size), 1<<16)
	pre, _ := br.Peek(12)
	if len(pre) < 10 || !bytes.Equal(pre[:6], npy.Magic[:]) {
		return nil, errors.New("not a .npy array (bad magic)")
	}
	var hdrLen, preLen int64
	switch pre[6] {
	case 1:
		hdrLen, preLen = int64(binary.LittleEndian.Uint16(pre[8:10])), 10
	case 2:
		if len(pre) < 12 {
			return nil, errors.New("truncated .npy header")
		}
		hdrLen, preLen = int64(binary.LittleEndian.Uint32(pre[8:12])), 12
	default:
		return nil, fmt.Errorf("unsupported .npy format version %d.%d", pre[6], pre[7])
	}
	if preLen+hdrLen > size {
		return nil, fmt.Errorf("truncated .npy header (%d header bytes declared, file has %d)", hdrLen, size)
	}
	if hdr, _ := br.Peek(int(preLen + hdrLen)); !bytes.Contains(hdr[preLen:], []byte("\n")) ||
		!bytes.Contains(hdr[preLen:], []byte("}")) {
		return nil, errors.New("malformed .npy header")
	}

	fr := &fullReader{r: br}
	defer func() {
		// npyio slices its header text without bounds checks; a malformed
		// header must surface as an error, not a crash.
		if p := recover(); p != nil {
			a, err = nil, fmt.Errorf("malformed .npy header (%v)", p)
		}
	}()
	nr, err := npy.NewReader(fr)
	if err != nil {
		return nil, fmt.Errorf("bad .npy header: %v", err)
	}
	h := nr.Header
	a = &array{shape: h.Descr.Shape, dtype: h.Descr.Type}
	t := npy.TypeFrom(h.Descr.Type)
	if t == nil {
		return nil, fmt.Errorf("unsupported dtype %q (object arrays, e.g. ragged lists, and structured dtypes cannot be read)", h.Descr.Type)
	}
	switch t.Kind() {
	case reflect.Complex64, reflect.Complex128:
		return nil, fmt.Errorf("dtype %q is complex; want a real float or integer dtype", a.dtype)
	case reflect.String:
		return nil, fmt.Errorf("dtype %q holds strings; want a numeric dtype", a.dtype)
	case reflect.Bool:
		return nil, fmt.Errorf("dtype %q is boolean; want a numeric dtype", a.dtype)
	}
	nelem := 1
	for _, d := range a.shape {
		if d < 0 {
			return nil, fmt.Errorf("negative dimension in shape %s", a.shapeString())
		}
		if d > 0 && nelem > maxElems/d {
			return nil, fmt.Errorf("shape %s too large", a.shapeString())
		}
		nelem *= d
	}
	if need := int64(nelem) * int64(t.Size()); need > size-fr.n {
		return nil, fmt.Errorf("truncated data: shape %s of %s needs %d bytes, file has %d after the header",
			a.shapeString(), h.Descr.Type, need, size-fr.n)
	}
	if nelem == 0 {
		if t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64 {
			a.f = []float64{}
		} else {
			a.i = []int64{}
		}
		return a, nil
	}
	if err := decodeNPY(nr, t, a); err != nil {
		return nil, err
	}
	if fr.truncated {
		return nil, fmt.Errorf("truncated data: shape %s of %s, file ends early", a.shapeString(), h.Descr.Type)
	}
	if rest := size - fr.n; rest > 0 {
		return nil, fmt.Errorf("%d bytes after the data of shape %s of %s (shape and data disagree)", rest, a.shapeString(), h.Descr.Type)
	}
	if h.Descr.Fortran && len(a.shape) == 2 {
		a.transposeFortran()
	}
	return a, nil
}

// decodeNPY reads the data of nr into a according to its element type t.
func decodeNPY(nr *npy.Reader, t reflect.Type, a *array) error {
	widenI := func(n int, at func(int) int64) {
		a.i = make([]int64, n)
		for j := range a.i {
			a.i[j] = at(j)
		}
	}
	var err error
	switch t.Kind() {
	case reflect.Float32:
		var v []float32
		if err = nr.Read(&v); err == nil {
			a.f = make([]float64, len(v))
			for j, x := range v {
				a.f[j] = float64(x)
			}
		}
	case reflect.Float64:
		err = nr.Read(&a.f)
	case reflect.Int8:
		var v []int8
		if err = nr.Read(&v); err == nil {
			widenI(len(v), func(j int) int64 { return int64(v[j]) })
		}
	case reflect.Int16:
		var v []int16
		if err = nr.Read(&v); err == nil {
			widenI(len(v), func(j int) int64 { return int64(v[j]) })
		}
	case reflect.Int32:
		var v []int32
		if err = nr.Read(&v); err == nil {
			widenI(len(v), func(j int) int64 { return int64(v[j]) })
		}
	case reflect.Int64:
		err = nr.Read(&a.i)
	case reflect.Uint8:
		var v []uint8
		if err = nr.Read(&v); err == nil {
			widenI(len(v), func(j int) int64 { return int64(v[j]) })
		}
	case reflect.Uint16:
		var v []uint16
		if err = nr.Read(&v); err == nil {
			widenI(len(v), func(j int) int64 { return int64(v[j]) })
		}
	case reflect.Uint32:
		var v []uint32
		if err = nr.Read(&v); err == nil {
			widenI(len(v), func(j int) int64 { return int64(v[j]) })
		}
	case reflect.Uint64:
		var v []uint64
		if err = nr.Read(&v); err == nil {
			widenI(len(v), func(j int) int64 {
				if v[j] > math.MaxInt64 {
					return math.MaxInt64 // reported as out of range later
				}
				return int64(v[j])
			})
		}
	default:
		return fmt.Errorf("unsupported dtype %q", a.dtype)
	}
	if err != nil {
		return fmt.Errorf("reading %s data: %v", a.dtype, err)
	}
	return nil
}

// transposeFortran turns column-major 2-D data into row-major.
func (a *array) transposeFortran() {
	r, c := a.shape[0], a.shape[1]
	if a.f != nil {
		t := make([]float64, len(a.f))
		for i := 0; i < r; i++ {
			for j := 0; j < c; j++ {
				t[i*c+j] = a.f[j*r+i]
			}
		}
		a.f = t
	}
	if a.i != nil {
		t := make([]int64, len(a.i))
		for i := 0; i < r; i++ {
			for j := 0; j < c; j++ {
				t[i*c+j] = a.i[j*r+i]
			}
		}
		a.i = t
	}
}

// npzFile is an opened .npz archive.
type npzFile struct {
	path    string
	entries map[string]*zip.File
	closer  io.Closer
}

func openNPZ(path string) (*npzFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	zr, err := zip.NewReader(f, st.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: not an .npz archive: %v", path, err)
	}
	z := &npzFile{path: path, entries: map[string]*zip.File{}, closer: f}
	for _, e := range zr.File {
		k := strings.TrimSuffix(e.Name, ".npy")
		if _, dup := z.entries[k]; dup {
			f.Close()
			return nil, fmt.Errorf("%s: array %q appears twice", path, k)
		}
		z.entries[k] = e
	}
	return z, nil
}

func (z *npzFile) Close() error { return z.closer.Close() }

func (z *npzFile) keys() string {
	ks := make([]string, 0, len(z.entries))
	for k := range z.entries {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	if len(ks) == 0 {
		return "none"
	}
	return strings.Join(ks, ", ")
}

func (z *npzFile) has(key string) bool { _, ok := z.entries[key]; return ok }

// read decodes array key; errors name the file and the key.
func (z *npzFile) read(key string) (*array, error) {
	e, ok := z.entries[key]
	if !ok {
		return nil, fmt.Errorf("%s: missing array %q (present: %s)", z.path, key, z.keys())
	}
	if e.UncompressedSize64 > 8*maxElems {
		return nil, fmt.Errorf("%s: array %q: %d bytes is too large", z.path, key, e.UncompressedSize64)
	}
	rc, err := e.Open()
	if err != nil {
		return nil, fmt.Errorf("%s: array %q: %v", z.path, key, err)
	}
	defer rc.Close()
	a, err := readNPY(rc, int64(e.UncompressedSize64))
	if err != nil {
		return nil, fmt.Errorf("%s: array %q: %v", z.path, key, err)
	}
	return a, nil
}

// readNPYFile decodes a standalone .npy file; errors name the file.
func readNPYFile(path string) (*array, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	a, err := readNPY(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return a, nil
}

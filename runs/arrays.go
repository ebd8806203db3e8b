package runs

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"

	"selmix/internal/boundedfile"
)

// arraysName is the binary sidecar of the event log (docs/run-format.md).
const arraysName = "arrays.bin"

// DType says how an array's elements are stored: numpy's type strings,
// so a reader can hand them to numpy.frombuffer unchanged.
type DType string

const (
	Float32 DType = "<f4" // little-endian IEEE 754 binary32
	Float64 DType = "<f8" // little-endian IEEE 754 binary64
)

func (d DType) size() int {
	switch d {
	case Float32:
		return 4
	case Float64:
		return 8
	}
	return 0
}

// Array is one named array of a sidecar record. Data holds the values in
// C order whatever DType stores them as: a Float32 array is rounded when
// written and exact when read back.
type Array struct {
	Name  string
	DType DType
	Shape []int
	Data  []float64
}

// Ref locates one record of arrays.bin: what an event carries in its
// "arrays" list.
type Ref struct {
	Offset int64 `json:"offset"`
	Length int64 `json:"length"`
}

// Record layout (all integers little-endian; docs/run-format.md):
//
//	magic   4 bytes  "SXA1"
//	hlen    uint32   length of the header
//	header  hlen     JSON {"arrays":[{"name":…,"dtype":"<f4"|"<f8","shape":[…]},…]}
//	payload          each array's elements in header order, no padding
//	crc     uint32   CRC-32 (IEEE) of every byte before it
var recordMagic = [4]byte{'S', 'X', 'A', '1'}

// minRecord is the size of a record with an empty header and payload.
const minRecord = 4 + 4 + 4

type arrayHeader struct {
	Name  string `json:"name"`
	DType DType  `json:"dtype"`
	Shape []int  `json:"shape"`
}

type recordHeader struct {
	Arrays []arrayHeader `json:"arrays"`
}

// elems is the number of elements of shape, or an error if a dimension is
// negative or the count exceeds max.
func elems(shape []int, max int64) (int64, error) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension in shape %v", shape)
		}
		if d > 0 && n > max/int64(d) {
			return 0, fmt.Errorf("shape %v is larger than the record", shape)
		}
		n *= int64(d)
	}
	return n, nil
}

// EncodeRecord renders arrays as one sidecar record. Names must be
// non-empty and distinct, and each Data must fill its Shape.
func EncodeRecord(arrays []Array) ([]byte, error) {
	var h recordHeader
	seen := map[string]bool{}
	payload := 0
	for _, a := range arrays {
		if a.Name == "" || seen[a.Name] {
			return nil, fmt.Errorf("arrays: empty or repeated name %q", a.Name)
		}
		seen[a.Name] = true
		if a.DType.size() == 0 {
			return nil, fmt.Errorf("arrays: %s: unknown dtype %q", a.Name, a.DType)
		}
		n, err := elems(a.Shape, math.MaxInt32)
		if err != nil {
			return nil, fmt.Errorf("arrays: %s: %v", a.Name, err)
		}
		if n != int64(len(a.Data)) {
			return nil, fmt.Errorf("arrays: %s: %d values for shape %v", a.Name, len(a.Data), a.Shape)
		}
		shape := a.Shape
		if shape == nil {
			shape = []int{}
		}
		h.Arrays = append(h.Arrays, arrayHeader{a.Name, a.DType, shape})
		payload += len(a.Data) * a.DType.size()
	}
	if h.Arrays == nil {
		h.Arrays = []arrayHeader{}
	}
	// Not json.Marshal: it would escape the "<" of the dtypes as \u003c.
	var hbuf bytes.Buffer
	enc := json.NewEncoder(&hbuf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(h); err != nil {
		return nil, err
	}
	hb := bytes.TrimSuffix(hbuf.Bytes(), []byte("\n"))
	b := make([]byte, 0, minRecord+len(hb)+payload)
	b = append(b, recordMagic[:]...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(hb)))
	b = append(b, hb...)
	for _, a := range arrays {
		switch a.DType {
		case Float32:
			for _, v := range a.Data {
				b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(v)))
			}
		case Float64:
			for _, v := range a.Data {
				b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
			}
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b)), nil
}

// splitRecord parses the header of a record whose checksum was checked
// and returns it with the payload after it.
func splitRecord(b []byte) (recordHeader, []byte, error) {
	body := b[:len(b)-4]
	hlen := int64(binary.LittleEndian.Uint32(b[4:8]))
	if hlen > int64(len(body)-8) {
		return recordHeader{}, nil, fmt.Errorf("header length %d exceeds the record", hlen)
	}
	var h recordHeader
	if err := json.Unmarshal(body[8:8+hlen], &h); err != nil {
		return recordHeader{}, nil, fmt.Errorf("header: %v", err)
	}
	return h, body[8+hlen:], nil
}

// DecodeRecord parses one whole record and checks its checksum.
func DecodeRecord(b []byte) ([]Array, error) {
	if err := checkRecord(b); err != nil {
		return nil, err
	}
	h, payload, err := splitRecord(b)
	if err != nil {
		return nil, err
	}
	rest := int64(len(payload))
	seen := map[string]bool{}
	out := make([]Array, 0, len(h.Arrays))
	for _, ah := range h.Arrays {
		if ah.Name == "" || seen[ah.Name] {
			return nil, fmt.Errorf("header: empty or repeated array name %q", ah.Name)
		}
		seen[ah.Name] = true
		size := ah.DType.size()
		if size == 0 {
			return nil, fmt.Errorf("array %s: unknown dtype %q", ah.Name, ah.DType)
		}
		n, err := elems(ah.Shape, rest/int64(size))
		if err != nil {
			return nil, fmt.Errorf("array %s: %v", ah.Name, err)
		}
		if n*int64(size) > int64(len(payload)) {
			return nil, fmt.Errorf("array %s: shape %v needs %d bytes, %d left", ah.Name, ah.Shape, n*int64(size), len(payload))
		}
		data := make([]float64, n)
		switch ah.DType {
		case Float32:
			for i := range data {
				data[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(payload[4*i:])))
			}
		case Float64:
			for i := range data {
				data[i] = math.Float64frombits(binary.LittleEndian.Uint64(payload[8*i:]))
			}
		}
		payload = payload[n*int64(size):]
		out = append(out, Array{Name: ah.Name, DType: ah.DType, Shape: ah.Shape, Data: data})
	}
	if len(payload) != 0 {
		return nil, fmt.Errorf("%d bytes after the last array", len(payload))
	}
	return out, nil
}

// ArrayFile reads records of a run's arrays.bin.
type ArrayFile struct {
	path string
	f    *os.File
}

// ArraysPath is the sidecar of the run in dir.
func ArraysPath(dir string) string { return filepath.Join(dir, arraysName) }

// OpenArrays opens the run's sidecar for reading.
func (r *Run) OpenArrays() (*ArrayFile, error) {
	return OpenArrayFile(ArraysPath(r.Dir))
}

// OpenArrayFile opens a sidecar for reading.
func OpenArrayFile(path string) (*ArrayFile, error) {
	f, _, err := boundedfile.Open(path, boundedfile.Unbounded)
	if err != nil {
		return nil, err
	}
	return &ArrayFile{path: path, f: f}, nil
}

// Close closes the file.
func (a *ArrayFile) Close() error { return a.f.Close() }

// Read reads and checks the record at ref. Every error is one line naming
// the file, the offset and what is wrong.
func (a *ArrayFile) Read(ref Ref) ([]Array, error) {
	b, err := a.raw(ref, nil)
	if err != nil {
		return nil, err
	}
	arrs, err := DecodeRecord(b)
	if err != nil {
		return nil, a.damaged(ref, "corrupt: %v", err)
	}
	return arrs, nil
}

// Check reads the record at ref into buf (grown as needed, returned for
// reuse) and checks its magic and checksum without decoding its data: how
// a reader finds damage to every record when it opens a run. want, if not
// nil, is then given the record's arrays without their data (Data nil)
// and says whether they are what the event referring to it needs (a
// reference to the wrong record is damage too).
func (a *ArrayFile) Check(ref Ref, buf []byte, want func([]Array) error) ([]byte, error) {
	b, err := a.raw(ref, buf)
	if err != nil {
		return buf, err
	}
	if err := checkRecord(b); err != nil {
		return b, a.damaged(ref, "corrupt: %v", err)
	}
	if want == nil {
		return b, nil
	}
	arrs, err := recordShapes(b)
	if err == nil {
		err = want(arrs)
	}
	if err != nil {
		return b, a.damaged(ref, "%v", err)
	}
	return b, nil
}

// recordShapes is the arrays a checked record holds, without their data:
// each name, dtype and shape, checked against the payload's size.
func recordShapes(b []byte) ([]Array, error) {
	h, payload, err := splitRecord(b)
	if err != nil {
		return nil, err
	}
	rest := int64(len(payload))
	out := make([]Array, 0, len(h.Arrays))
	for _, ah := range h.Arrays {
		size := int64(ah.DType.size())
		if size == 0 {
			return nil, fmt.Errorf("array %s: unknown dtype %q", ah.Name, ah.DType)
		}
		n, err := elems(ah.Shape, rest/size)
		if err != nil {
			return nil, fmt.Errorf("array %s: %v", ah.Name, err)
		}
		if rest -= n * size; rest < 0 {
			return nil, fmt.Errorf("array %s: shape %v is larger than the record", ah.Name, ah.Shape)
		}
		out = append(out, Array{Name: ah.Name, DType: ah.DType, Shape: ah.Shape})
	}
	return out, nil
}

// damaged is the one-line error for the record at ref.
func (a *ArrayFile) damaged(ref Ref, format string, args ...any) error {
	return Damaged(fmt.Errorf("%s: record at offset %d: %s", a.path, ref.Offset, fmt.Sprintf(format, args...)))
}

// raw reads the bytes of the record at ref, into buf if it is large
// enough.
func (a *ArrayFile) raw(ref Ref, buf []byte) ([]byte, error) {
	if ref.Offset < 0 || ref.Length < minRecord {
		return nil, a.damaged(ref, "invalid reference (length %d)", ref.Length)
	}
	fi, err := a.f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", a.path, err)
	}
	if end := ref.Offset + ref.Length; end > fi.Size() || end < ref.Offset {
		return nil, a.damaged(ref, "missing: the event says it ends at byte %d, the file has %d", ref.Offset+ref.Length, fi.Size())
	}
	if int64(cap(buf)) < ref.Length {
		if err := boundedfile.CheckAlloc(fmt.Sprintf("%s: the record at offset %d", a.path, ref.Offset), ref.Length); err != nil {
			return nil, err
		}
		buf = make([]byte, ref.Length)
	}
	b := buf[:ref.Length]
	if n, err := a.f.ReadAt(b, ref.Offset); n < len(b) {
		if err == nil || errors.Is(err, io.EOF) {
			return nil, a.damaged(ref, "%v", io.ErrUnexpectedEOF)
		}
		return nil, fmt.Errorf("%s: record at offset %d: %w", a.path, ref.Offset, err)
	}
	return b, nil
}

// checkRecord checks the length, magic and checksum of one record.
func checkRecord(b []byte) error {
	if len(b) < minRecord {
		return fmt.Errorf("%d bytes is shorter than any record (%d)", len(b), minRecord)
	}
	if !bytes.Equal(b[:4], recordMagic[:]) {
		return fmt.Errorf("bad magic %q, want %q", b[:4], recordMagic[:])
	}
	body := b[:len(b)-4]
	if got, want := crc32.ChecksumIEEE(body), binary.LittleEndian.Uint32(b[len(b)-4:]); got != want {
		return fmt.Errorf("checksum mismatch (CRC-32 %08x, record says %08x)", got, want)
	}
	return nil
}

// ReadArrays reads one record of the run's sidecar (see ArrayFile.Read).
func (r *Run) ReadArrays(ref Ref) ([]Array, error) {
	f, err := r.OpenArrays()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Read(ref)
}

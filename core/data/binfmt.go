package data

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"

	"selmix/internal/atomicfile"
	"selmix/internal/boundedfile"
)

// Set stream layout (little endian), version 1:
//
//	magic   "SMXSET\r\n"          8 bytes
//	version uint16 = 1
//	xEnc    uint8  1 = uint8 pixels (value = byte/255), 2 = float32 bits
//	yEnc    uint8  1 = uint8, 2 = uint16, 3 = int32 (any label, e.g. -1)
//	N       uint64
//	Dim     uint64
//	X       N·Dim elements in xEnc
//	Y       N elements in yEnc
//	crc     uint32 IEEE CRC-32 of every byte before it
//
// Split container, version 1:
//
//	magic   "SMXSPLT\n"           8 bytes
//	version uint16 = 1
//	K       uint32
//	names   K × (uint32 length, UTF-8 bytes)
//	counts  K × uint64 (TrainCounts)
//	sets    4 × (uint64 length, Set stream): labeled, unlabeled, val, test
//	crc     uint32 IEEE CRC-32 of every byte before it
const (
	setMagic     = "SMXSET\r\n"
	splitMagic   = "SMXSPLT\n"
	formatVer    = 1
	setHeaderLen = 8 + 2 + 1 + 1 + 8 + 8

	xUint8   = 1
	xFloat32 = 2
	yUint8   = 1
	yUint16  = 2
	yInt32   = 3
)

// ErrChecksum reports data whose CRC-32 does not match its contents.
var ErrChecksum = errors.New("checksum mismatch (file corrupted)")

// SaveSet writes s in the compact binary format: pixels as bytes when every
// value is exactly b/255 (images), float32 otherwise; labels in the
// narrowest of uint8, uint16, int32 that holds them; a CRC-32 at the end.
func SaveSet(w io.Writer, s Set) error {
	b, err := marshalSet(s)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func marshalSet(s Set) ([]byte, error) {
	if err := s.shapeErr(); err != nil {
		return nil, fmt.Errorf("set: %v", err)
	}
	xEnc := byte(xUint8)
	for i, v := range s.X {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("set: non-finite value %v at row %d, column %d", v, i/s.Dim, i%s.Dim)
		}
	}
	for _, v := range s.X {
		if v < 0 || v > 1 || pixel(byte(math.Round(float64(v)*255))) != v {
			xEnc = xFloat32
			break
		}
	}
	yEnc := byte(yUint8)
	for _, y := range s.Y {
		switch {
		case y < 0 || y > math.MaxUint16:
			yEnc = yInt32
		case y > math.MaxUint8 && yEnc == yUint8:
			yEnc = yUint16
		}
		if y < math.MinInt32 || y > math.MaxInt32 {
			return nil, fmt.Errorf("set: label %d does not fit in int32", y)
		}
	}
	size := setHeaderLen + len(s.X)*xSize(xEnc) + len(s.Y)*ySize(yEnc) + 4
	b := make([]byte, 0, size)
	b = append(b, setMagic...)
	b = binary.LittleEndian.AppendUint16(b, formatVer)
	b = append(b, xEnc, yEnc)
	b = binary.LittleEndian.AppendUint64(b, uint64(s.N))
	b = binary.LittleEndian.AppendUint64(b, uint64(s.Dim))
	for _, v := range s.X {
		if xEnc == xUint8 {
			b = append(b, byte(math.Round(float64(v)*255)))
		} else {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
	}
	for _, y := range s.Y {
		switch yEnc {
		case yUint8:
			b = append(b, byte(y))
		case yUint16:
			b = binary.LittleEndian.AppendUint16(b, uint16(y))
		default:
			b = binary.LittleEndian.AppendUint32(b, uint32(int32(y)))
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b)), nil
}

func xSize(enc byte) int {
	if enc == xUint8 {
		return 1
	}
	return 4
}

func ySize(enc byte) int {
	switch enc {
	case yUint8:
		return 1
	case yUint16:
		return 2
	}
	return 4
}

// LoadSet reads one Set written by SaveSet, consuming exactly its bytes.
// It verifies the magic, version, encodings, sizes and checksum, and rejects
// non-finite values.
func LoadSet(r io.Reader) (Set, error) {
	hdr := make([]byte, setHeaderLen)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return Set{}, fmt.Errorf("set: truncated header: %w", err)
	}
	n, dim, xEnc, yEnc, err := parseSetHeader(hdr)
	if err != nil {
		return Set{}, err
	}
	body := n*dim*xSize(xEnc) + n*ySize(yEnc) + 4
	var buf bytes.Buffer
	buf.Grow(min(body, 1<<20) + setHeaderLen)
	buf.Write(hdr)
	if got, err := io.CopyN(&buf, r, int64(body)); err != nil {
		return Set{}, fmt.Errorf("set: truncated: header promises %d bytes of data, found %d", body, got)
	}
	return decodeSet(buf.Bytes())
}

// parseSetHeader validates a set header and returns its fields.
func parseSetHeader(hdr []byte) (n, dim int, xEnc, yEnc byte, err error) {
	if string(hdr[:8]) != setMagic {
		return 0, 0, 0, 0, fmt.Errorf("set: bad magic %q, want %q", hdr[:8], setMagic)
	}
	if v := binary.LittleEndian.Uint16(hdr[8:]); v != formatVer {
		return 0, 0, 0, 0, fmt.Errorf("set: format version %d, this build reads version %d", v, formatVer)
	}
	xEnc, yEnc = hdr[10], hdr[11]
	if xEnc != xUint8 && xEnc != xFloat32 {
		return 0, 0, 0, 0, fmt.Errorf("set: unknown pixel encoding %d", xEnc)
	}
	if yEnc < yUint8 || yEnc > yInt32 {
		return 0, 0, 0, 0, fmt.Errorf("set: unknown label encoding %d", yEnc)
	}
	n64, d64 := binary.LittleEndian.Uint64(hdr[12:]), binary.LittleEndian.Uint64(hdr[20:])
	if n64 > maxElems || d64 > maxElems || d64 > 0 && n64 > maxElems/d64 {
		return 0, 0, 0, 0, fmt.Errorf("set: implausible shape N=%d Dim=%d", n64, d64)
	}
	return int(n64), int(d64), xEnc, yEnc, nil
}

// decodeSet decodes a complete set stream b (header through checksum).
func decodeSet(b []byte) (Set, error) {
	if len(b) < setHeaderLen+4 {
		return Set{}, fmt.Errorf("set: truncated (%d bytes)", len(b))
	}
	n, dim, xEnc, yEnc, err := parseSetHeader(b[:setHeaderLen])
	if err != nil {
		return Set{}, err
	}
	want := setHeaderLen + n*dim*xSize(xEnc) + n*ySize(yEnc) + 4
	if len(b) != want {
		return Set{}, fmt.Errorf("set: %d bytes, header N=%d Dim=%d implies %d", len(b), n, dim, want)
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return Set{}, fmt.Errorf("set: %w", ErrChecksum)
	}
	s := Set{X: make([]float32, n*dim), Y: make([]int, n), N: n, Dim: dim}
	p := body[setHeaderLen:]
	if xEnc == xUint8 {
		for i, b := range p[:len(s.X)] {
			s.X[i] = pixels[b]
		}
	} else {
		for i := range s.X {
			v := math.Float32frombits(binary.LittleEndian.Uint32(p[4*i:]))
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return Set{}, fmt.Errorf("set: non-finite value %v at row %d, column %d", v, i/dim, i%dim)
			}
			s.X[i] = v
		}
	}
	p = p[len(s.X)*xSize(xEnc):]
	for i := range s.Y {
		switch yEnc {
		case yUint8:
			s.Y[i] = int(p[i])
		case yUint16:
			s.Y[i] = int(binary.LittleEndian.Uint16(p[2*i:]))
		default:
			s.Y[i] = int(int32(binary.LittleEndian.Uint32(p[4*i:])))
		}
	}
	return s, nil
}

// MarshalSplit encodes sp in the split container format.
func MarshalSplit(sp *Split) ([]byte, error) {
	if err := sp.check(); err != nil {
		return nil, err
	}
	var b []byte
	b = append(b, splitMagic...)
	b = binary.LittleEndian.AppendUint16(b, formatVer)
	b = binary.LittleEndian.AppendUint32(b, uint32(sp.K))
	for _, name := range sp.ClassNames {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(name)))
		b = append(b, name...)
	}
	for _, c := range sp.TrainCounts {
		b = binary.LittleEndian.AppendUint64(b, uint64(c))
	}
	for _, s := range sp.sets() {
		sb, err := marshalSet(*s.s)
		if err != nil {
			return nil, fmt.Errorf("split: %s %v", s.name, err)
		}
		b = binary.LittleEndian.AppendUint64(b, uint64(len(sb)))
		b = append(b, sb...)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b)), nil
}

// SaveSplit writes sp to path atomically.
func SaveSplit(path string, sp *Split) error {
	b, err := MarshalSplit(sp)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, b)
}

// splitFile bounds a split file.
var splitFile = boundedfile.Limit{What: "split file", Max: 16 << 30}

// LoadSplit reads a split file written by SaveSplit; errors name the file.
func LoadSplit(path string) (*Split, error) {
	b, err := boundedfile.ReadFile(path, splitFile)
	if err != nil {
		return nil, err
	}
	sp, err := LoadSplitBytes(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return sp, nil
}

// LoadSplitBytes decodes a split container (e.g. one embedded with
// go:embed), verifying its checksum and the consistency of its parts.
func LoadSplitBytes(b []byte) (*Split, error) {
	if len(b) < len(splitMagic)+2+4+4 {
		return nil, fmt.Errorf("split: truncated (%d bytes)", len(b))
	}
	if string(b[:8]) != splitMagic {
		return nil, fmt.Errorf("split: bad magic %q, want %q", b[:8], splitMagic)
	}
	if v := binary.LittleEndian.Uint16(b[8:]); v != formatVer {
		return nil, fmt.Errorf("split: format version %d, this build reads version %d", v, formatVer)
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return nil, fmt.Errorf("split: %w", ErrChecksum)
	}
	p := body[10:]
	next := func(n int, what string) ([]byte, error) {
		if n < 0 || n > len(p) {
			return nil, fmt.Errorf("split: truncated in %s", what)
		}
		out := p[:n]
		p = p[n:]
		return out, nil
	}
	kb, err := next(4, "K")
	if err != nil {
		return nil, err
	}
	k64 := binary.LittleEndian.Uint32(kb)
	if k64 > uint32(len(p)) || k64 > maxClasses {
		return nil, fmt.Errorf("split: implausible K=%d", k64)
	}
	sp := &Split{K: int(k64), ClassNames: make([]string, k64), TrainCounts: make([]int, k64)}
	for k := range sp.ClassNames {
		lb, err := next(4, fmt.Sprintf("the length of class name %d", k))
		if err != nil {
			return nil, err
		}
		nb, err := next(int(min(binary.LittleEndian.Uint32(lb), uint32(len(p)+1))), fmt.Sprintf("class name %d", k))
		if err != nil {
			return nil, err
		}
		sp.ClassNames[k] = string(nb)
	}
	for k := range sp.TrainCounts {
		cb, err := next(8, fmt.Sprintf("the count of class %d", k))
		if err != nil {
			return nil, err
		}
		c := binary.LittleEndian.Uint64(cb)
		if c > maxElems {
			return nil, fmt.Errorf("split: implausible count %d for class %d", c, k)
		}
		sp.TrainCounts[k] = int(c)
	}
	for _, s := range sp.sets() {
		lb, err := next(8, s.name+" set length")
		if err != nil {
			return nil, err
		}
		n := binary.LittleEndian.Uint64(lb)
		sb, err := next(int(min(n, uint64(len(p)+1))), s.name+" set")
		if err != nil {
			return nil, err
		}
		if *s.s, err = decodeSet(sb); err != nil {
			return nil, fmt.Errorf("split: %s %v", s.name, err)
		}
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("split: %d unexpected bytes after the test set", len(p))
	}
	if err := sp.check(); err != nil {
		return nil, err
	}
	return sp, nil
}

type namedSet struct {
	name string
	s    *Set
}

func (sp *Split) sets() []namedSet {
	return []namedSet{{"labeled", &sp.Labeled}, {"unlabeled", &sp.Unlabeled}, {"val", &sp.Val}, {"test", &sp.Test}}
}

// check verifies the invariants every Split must satisfy.
func (sp *Split) check() error {
	if sp == nil {
		return errors.New("split: nil")
	}
	if sp.K < 2 || sp.K > maxClasses {
		return fmt.Errorf("split: K=%d, want 2…%d", sp.K, maxClasses)
	}
	if len(sp.ClassNames) != sp.K || len(sp.TrainCounts) != sp.K {
		return fmt.Errorf("split: %d class names and %d train counts for K=%d", len(sp.ClassNames), len(sp.TrainCounts), sp.K)
	}
	dim := -1
	for _, s := range sp.sets() {
		if err := s.s.shapeErr(); err != nil {
			return fmt.Errorf("split: %s set: %v", s.name, err)
		}
		lo := 0
		if s.s == &sp.Unlabeled {
			lo = -1
		}
		if err := s.s.checkLabels(sp.K, lo); err != nil {
			return fmt.Errorf("split: %s set: %v", s.name, err)
		}
		if s.s.N == 0 {
			continue
		}
		if dim >= 0 && s.s.Dim != dim {
			return fmt.Errorf("split: %s set has Dim=%d, others %d", s.name, s.s.Dim, dim)
		}
		dim = s.s.Dim
	}
	for k, c := range sp.Labeled.Counts(sp.K) {
		if c != sp.TrainCounts[k] {
			return fmt.Errorf("split: TrainCounts[%d]=%d but the labeled set has %d samples of class %d", k, sp.TrainCounts[k], c, k)
		}
	}
	return nil
}

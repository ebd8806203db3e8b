package npy

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"
)

// ValueError reports an element that does not fit the type it is read
// into, such as a float64 beyond the float32 range or a uint64 label
// beyond int64.
type ValueError struct {
	Index int    // flat index in C order
	Value string // the element as stored, exactly
	Type  string // the type it was read into
}

func (e *ValueError) Error() string {
	return fmt.Sprintf("value %s at flat index %d does not fit in %s", e.Value, e.Index, e.Type)
}

// chunk is the size of the buffer data is decoded through.
const chunk = 1 << 16

var le = binary.LittleEndian

// converter decodes len(dst) little-endian elements from src into dst and
// returns the index of the first element that does not fit, or -1.
type converter[T any] func(dst []T, src []byte) int

// ReadFloat32 reads a float32 or float64 array into dst (C order);
// len(dst) must be a.Len(). A float64 too large for float32 is a
// *ValueError; NaN and ±Inf are read as they are.
func (a *Array) ReadFloat32(dst []float32) error { return readFloats(a, dst, "float32") }

// ReadFloat64 reads a float32 or float64 array into dst (C order);
// len(dst) must be a.Len().
func (a *Array) ReadFloat64(dst []float64) error { return readFloats(a, dst, "float64") }

func readFloats[T float32 | float64](a *Array, dst []T, name string) error {
	if a.DType.Kind != Float {
		return a.Errorf("dtype %s, want float32 or float64", a.DType)
	}
	if a.DType.Size == 4 {
		return readInto(a, dst, name, func(dst []T, src []byte) int {
			for i := range dst {
				dst[i] = T(math.Float32frombits(le.Uint32(src[4*i:])))
			}
			return -1
		})
	}
	return readInto(a, dst, name, func(dst []T, src []byte) int {
		for i := range dst {
			v := math.Float64frombits(le.Uint64(src[8*i:]))
			f := T(v) // float32: rounds, and overflows to ±Inf
			if math.IsInf(float64(f), 0) && !math.IsInf(v, 0) {
				return i
			}
			dst[i] = f
		}
		return -1
	})
}

// ReadInt reads an array of any integer dtype into dst (C order);
// len(dst) must be a.Len(). A value beyond int is a *ValueError.
func (a *Array) ReadInt(dst []int) error {
	var conv converter[int]
	switch a.DType.Kind {
	case Int:
		conv = intConverter(a.DType.Size, true)
	case Uint:
		conv = intConverter(a.DType.Size, false)
	default:
		what := ""
		if a.DType.Kind == Bytes || a.DType.Kind == Unicode {
			what = " (it holds strings)"
		}
		return a.Errorf("dtype %s%s, want an integer dtype", a.DType, what)
	}
	return readInto(a, dst, "int", conv)
}

func intConverter(size int, signed bool) converter[int] {
	switch {
	case size == 1 && signed:
		return widen(1, func(b []byte) int8 { return int8(b[0]) })
	case size == 1:
		return widen(1, func(b []byte) uint8 { return b[0] })
	case size == 2 && signed:
		return widen(2, func(b []byte) int16 { return int16(le.Uint16(b)) })
	case size == 2:
		return widen(2, le.Uint16)
	case size == 4 && signed:
		return widen(4, func(b []byte) int32 { return int32(le.Uint32(b)) })
	case size == 4:
		return widen(4, le.Uint32)
	case signed:
		return widen(8, func(b []byte) int64 { return int64(le.Uint64(b)) })
	default:
		return widen(8, le.Uint64)
	}
}

// widen converts elements of size bytes, read by get, to int; it stops at
// the first that int cannot hold (its value or its sign would change) and
// returns its index.
func widen[T int8 | uint8 | int16 | uint16 | int32 | uint32 | int64 | uint64](size int, get func([]byte) T) converter[int] {
	return func(dst []int, src []byte) int {
		for i := range dst {
			v := get(src[size*i:])
			if T(int(v)) != v || (v < 0) != (int(v) < 0) {
				return i
			}
			dst[i] = int(v)
		}
		return -1
	}
}

// ReadUint8 reads a uint8 array into dst (C order); len(dst) must be
// a.Len().
func (a *Array) ReadUint8(dst []uint8) error {
	if a.DType.Kind != Uint || a.DType.Size != 1 {
		return a.Errorf("dtype %s, want uint8 (|u1)", a.DType)
	}
	return readInto(a, dst, "uint8", func(dst []uint8, src []byte) int {
		copy(dst, src)
		return -1
	})
}

// readInto streams the data through a chunk-sized buffer, swaps it to
// little-endian, converts it into dst and, for Fortran order, scatters it
// to its C-order places. Then it checks the stream's end (size, CRC-32).
func readInto[T any](a *Array, dst []T, typ string, conv converter[T]) (err error) {
	n := a.Len()
	if len(dst) != n {
		panic(fmt.Sprintf("npy: destination holds %d elements, the array %d", len(dst), n))
	}
	if a.read {
		panic("npy: array read twice")
	}
	a.read = true
	defer guard(a.where, &err)
	size := a.DType.Size
	per := chunk / size
	buf := make([]byte, min(n, per)*size)
	var (
		f   *fortranOrder
		tmp []T
	)
	if a.Fortran && len(a.Shape) > 1 {
		f = newFortranOrder(a.Shape)
		tmp = make([]T, min(n, per))
	}
	for off := 0; off < n; {
		m := min(n-off, per)
		b := buf[:m*size]
		if _, err := io.ReadFull(a.src, b); err != nil {
			return a.corrupt(err)
		}
		if a.DType.BigEndian {
			swap(b, size)
		}
		out := dst[off : off+m]
		if f != nil {
			out = tmp[:m]
		}
		if bad := conv(out, b); bad >= 0 {
			return a.Errorf("%w", &ValueError{Index: a.cIndex(off + bad), Value: a.format(b[bad*size : (bad+1)*size]), Type: typ})
		}
		if f != nil {
			for _, v := range out {
				dst[f.next()] = v
			}
		}
		off += m
	}
	return a.finish()
}

// finish checks the end of the stream once the data has been read.
func (a *Array) finish() error {
	if err := a.end(); err != nil {
		return a.corrupt(err)
	}
	a.verified = true
	return nil
}

// format prints one little-endian element exactly.
func (a *Array) format(b []byte) string {
	var v uint64
	for i := len(b) - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	switch a.DType.Kind {
	case Float:
		if a.DType.Size == 4 {
			return strconv.FormatFloat(float64(math.Float32frombits(uint32(v))), 'g', -1, 32)
		}
		return strconv.FormatFloat(math.Float64frombits(v), 'g', -1, 64)
	case Int:
		shift := 64 - 8*uint(len(b))
		return strconv.FormatInt(int64(v<<shift)>>shift, 10)
	}
	return strconv.FormatUint(v, 10)
}

// cIndex is the C-order index of the element at position p of the data.
func (a *Array) cIndex(p int) int {
	if !a.Fortran || len(a.Shape) < 2 {
		return p
	}
	c, stride := 0, 1
	strides := make([]int, len(a.Shape))
	for k := len(a.Shape) - 1; k >= 0; k-- {
		strides[k] = stride
		stride *= a.Shape[k]
	}
	for k, d := range a.Shape {
		c += (p % d) * strides[k]
		p /= d
	}
	return c
}

// swap reverses the bytes of each size-byte element of b.
func swap(b []byte, size int) {
	for i := 0; i+size <= len(b); i += size {
		for j, k := i, i+size-1; j < k; j, k = j+1, k-1 {
			b[j], b[k] = b[k], b[j]
		}
	}
}

// fortranOrder walks the C-order indices of an array's elements in
// Fortran (column-major) order: the first index varies fastest.
type fortranOrder struct {
	shape, idx, stride []int
	c                  int
}

func newFortranOrder(shape []int) *fortranOrder {
	f := &fortranOrder{shape: shape, idx: make([]int, len(shape)), stride: make([]int, len(shape))}
	s := 1
	for k := len(shape) - 1; k >= 0; k-- {
		f.stride[k] = s
		s *= shape[k]
	}
	return f
}

// next returns the C index of the current element and advances.
func (f *fortranOrder) next() int {
	c := f.c
	for k := range f.shape {
		f.idx[k]++
		f.c += f.stride[k]
		if f.idx[k] < f.shape[k] {
			break
		}
		f.c -= f.stride[k] * f.shape[k]
		f.idx[k] = 0
	}
	return c
}

// ReadStrings reads an array of fixed-width strings (|S… bytes, decoded
// as UTF-8, or <U… unicode) in C order, with NumPy's trailing NUL padding
// removed.
func (a *Array) ReadStrings() (out []string, err error) {
	if a.DType.Kind != Bytes && a.DType.Kind != Unicode {
		return nil, a.Errorf("dtype %s, want strings (<U… or |S…)", a.DType)
	}
	if a.read {
		panic("npy: array read twice")
	}
	a.read = true
	defer guard(a.where, &err)
	n, size := a.Len(), a.DType.Size
	b := make([]byte, n*size) // the header was checked against the bytes present
	if _, err := io.ReadFull(a.src, b); err != nil {
		return nil, a.corrupt(err)
	}
	if a.DType.Kind == Unicode && a.DType.BigEndian {
		swap(b, 4)
	}
	out = make([]string, n)
	var f *fortranOrder
	if a.Fortran && len(a.Shape) > 1 {
		f = newFortranOrder(a.Shape)
	}
	for p := range n {
		e := b[p*size : (p+1)*size]
		var s string
		if a.DType.Kind == Bytes {
			for len(e) > 0 && e[len(e)-1] == 0 {
				e = e[:len(e)-1]
			}
			if !utf8.Valid(e) {
				return nil, a.Errorf("string at flat index %d is not valid UTF-8", a.cIndex(p))
			}
			s = string(e)
		} else {
			for len(e) >= 4 && le.Uint32(e[len(e)-4:]) == 0 {
				e = e[:len(e)-4]
			}
			rs := make([]rune, len(e)/4)
			for i := range rs {
				r := le.Uint32(e[4*i:])
				if r > utf8.MaxRune || r >= 0xd800 && r < 0xe000 {
					return nil, a.Errorf("string at flat index %d holds invalid code point %#x", a.cIndex(p), r)
				}
				rs[i] = rune(r)
			}
			s = string(rs)
		}
		c := p
		if f != nil {
			c = f.next()
		}
		out[c] = s
	}
	if err := a.finish(); err != nil {
		return nil, err
	}
	return out, nil
}

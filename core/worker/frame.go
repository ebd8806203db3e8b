// Package worker drives a training worker process — the user's model in its
// own framework, on its own device — through the protocol of
// docs/worker-protocol.md. A Client is a train.Trainer: the engine decides
// (objectives, gain, P, schedule, controls), the worker takes the steps.
package worker

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
)

// Protocol is the version of docs/worker-protocol.md this package speaks.
const Protocol = 1

// Frame limits: a header is small JSON; a payload holds at most a
// checkpoint (a ResNet-50 with momentum is ~200 MB) or a K×K matrix.
const (
	maxHeader  = 1 << 20
	maxPayload = 16 << 30
)

// Array is one array of a frame: raw little-endian data in C order.
type Array struct {
	Name  string `json:"name"`
	Dtype string `json:"dtype"` // f4, f8, i8 or u1
	Shape []int  `json:"shape"`
	Data  []byte `json:"-"`
}

// Frame is one message: a JSON header and the arrays it lists.
type Frame struct {
	Header map[string]any
	Arrays []Array
	header []byte // the header as read (ReadFrame), for the typed replies
}

func itemSize(dtype string) int {
	switch dtype {
	case "f4":
		return 4
	case "f8", "i8":
		return 8
	case "u1":
		return 1
	}
	return 0
}

// nbytes is the size of an array of this dtype and shape, or an error.
func nbytes(a Array) (int64, error) {
	sz := itemSize(a.Dtype)
	if sz == 0 {
		return 0, fmt.Errorf("array %q: unknown dtype %q (want f4, f8, i8 or u1)", a.Name, a.Dtype)
	}
	n := int64(sz)
	for _, d := range a.Shape {
		if d < 0 {
			return 0, fmt.Errorf("array %q: negative dimension in shape %v", a.Name, a.Shape)
		}
		if d > 0 && n > maxPayload/int64(d) {
			return 0, fmt.Errorf("array %q: shape %v too large", a.Name, a.Shape)
		}
		n *= int64(d)
	}
	return n, nil
}

// WriteFrame writes f to w.
func WriteFrame(w io.Writer, f *Frame) error {
	h := make(map[string]any, len(f.Header)+1)
	for k, v := range f.Header {
		h[k] = v
	}
	var total int64
	if len(f.Arrays) > 0 {
		descs := make([]Array, len(f.Arrays))
		for i, a := range f.Arrays {
			n, err := nbytes(a)
			if err != nil {
				return err
			}
			if n != int64(len(a.Data)) {
				return fmt.Errorf("array %q: %d bytes for shape %v of %s", a.Name, len(a.Data), a.Shape, a.Dtype)
			}
			descs[i] = Array{Name: a.Name, Dtype: a.Dtype, Shape: a.Shape}
			total += n
		}
		h["arrays"] = descs
	}
	js, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if len(js) > maxHeader {
		return fmt.Errorf("frame header of %d bytes exceeds %d", len(js), maxHeader)
	}
	var pre [4]byte
	binary.LittleEndian.PutUint32(pre[:], uint32(len(js)))
	var plen [8]byte
	binary.LittleEndian.PutUint64(plen[:], uint64(total))
	for _, b := range [][]byte{pre[:], js, plen[:]} {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	for _, a := range f.Arrays {
		if _, err := w.Write(a.Data); err != nil {
			return err
		}
	}
	return nil
}

// ErrFrame marks a frame that breaks the protocol.
var ErrFrame = errors.New("malformed frame")

// ReadFrame reads one frame. It checks every length against the limits and
// against each other before allocating, so a corrupt stream is an error,
// never a panic or a huge allocation.
func ReadFrame(r io.Reader) (*Frame, error) {
	var pre [4]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return nil, err // io.EOF: the peer is gone
	}
	hl := binary.LittleEndian.Uint32(pre[:])
	if hl < 1 || hl > maxHeader {
		return nil, fmt.Errorf("%w: header length %d (want 1 … %d)", ErrFrame, hl, maxHeader)
	}
	js := make([]byte, hl)
	if _, err := io.ReadFull(r, js); err != nil {
		return nil, fmt.Errorf("%w: header cut short: %v", ErrFrame, err)
	}
	var h map[string]json.RawMessage
	if err := json.Unmarshal(js, &h); err != nil {
		return nil, fmt.Errorf("%w: header is not a JSON object: %v", ErrFrame, err)
	}
	var descs []Array
	if raw, ok := h["arrays"]; ok {
		if err := json.Unmarshal(raw, &descs); err != nil {
			return nil, fmt.Errorf("%w: \"arrays\": %v", ErrFrame, err)
		}
	}
	var plen [8]byte
	if _, err := io.ReadFull(r, plen[:]); err != nil {
		return nil, fmt.Errorf("%w: payload length cut short: %v", ErrFrame, err)
	}
	pl := binary.LittleEndian.Uint64(plen[:])
	var want int64
	seen := map[string]bool{}
	for _, a := range descs {
		if a.Name == "" || seen[a.Name] {
			return nil, fmt.Errorf("%w: array name %q empty or repeated", ErrFrame, a.Name)
		}
		seen[a.Name] = true
		n, err := nbytes(a)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrFrame, err)
		}
		if want += n; want > maxPayload {
			return nil, fmt.Errorf("%w: arrays of more than %d bytes", ErrFrame, int64(maxPayload))
		}
	}
	if pl != uint64(want) {
		return nil, fmt.Errorf("%w: payload of %d bytes, its arrays need %d", ErrFrame, pl, want)
	}
	f := &Frame{Header: map[string]any{}, header: js}
	for k, v := range h {
		if k == "arrays" {
			continue
		}
		var x any
		if err := json.Unmarshal(v, &x); err != nil {
			return nil, fmt.Errorf("%w: %q: %v", ErrFrame, k, err)
		}
		f.Header[k] = x
	}
	for _, a := range descs {
		n, _ := nbytes(a)
		// Grow with what arrives rather than trusting the declared size:
		// a corrupt length must not allocate gigabytes.
		data, err := readChunked(r, n)
		if err != nil {
			return nil, fmt.Errorf("%w: array %q cut short: %v", ErrFrame, a.Name, err)
		}
		a.Data = data
		f.Arrays = append(f.Arrays, a)
	}
	return f, nil
}

// readChunked reads n bytes in chunks of at most 64 MiB, so a corrupt
// length allocates no more than what arrives (plus one chunk), and a true
// one is read with no copy beyond the slice's growth.
func readChunked(r io.Reader, n int64) ([]byte, error) {
	const chunk = 1 << 26
	data := make([]byte, 0, min(n, chunk))
	for int64(len(data)) < n {
		k := int(min(n-int64(len(data)), chunk))
		data = slices.Grow(data, k)
		m, err := io.ReadFull(r, data[len(data):len(data)+k])
		data = data[:len(data)+m]
		if err != nil {
			return nil, err
		}
	}
	return data, nil
}

// Array returns the array named name, or nil.
func (f *Frame) Array(name string) *Array {
	for i := range f.Arrays {
		if f.Arrays[i].Name == name {
			return &f.Arrays[i]
		}
	}
	return nil
}

// F64 encodes v as an f8 array.
func F64(name string, v []float64, shape ...int) Array {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return Array{Name: name, Dtype: "f8", Shape: shape, Data: b}
}

// F32 encodes v as an f4 array (each value rounded to float32).
func F32(name string, v []float64, shape ...int) Array {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(x)))
	}
	return Array{Name: name, Dtype: "f4", Shape: shape, Data: b}
}

// I64 encodes v as an i8 array.
func I64(name string, v []int64, shape ...int) Array {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return Array{Name: name, Dtype: "i8", Shape: shape, Data: b}
}

// Bytes encodes b as a u1 array.
func Bytes(name string, b []byte) Array {
	return Array{Name: name, Dtype: "u1", Shape: []int{len(b)}, Data: b}
}

// Floats decodes a numeric array as float64 (f4, f8 or i8).
func (a *Array) Floats() []float64 {
	switch a.Dtype {
	case "f8":
		out := make([]float64, len(a.Data)/8)
		for i := range out {
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(a.Data[8*i:]))
		}
		return out
	case "f4":
		out := make([]float64, len(a.Data)/4)
		for i := range out {
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(a.Data[4*i:])))
		}
		return out
	case "i8":
		out := make([]float64, len(a.Data)/8)
		for i := range out {
			out[i] = float64(int64(binary.LittleEndian.Uint64(a.Data[8*i:])))
		}
		return out
	}
	return nil
}

// Ints decodes an i8 array; nil for any other dtype.
func (a *Array) Ints() []int64 {
	if a.Dtype != "i8" {
		return nil
	}
	out := make([]int64, len(a.Data)/8)
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(a.Data[8*i:]))
	}
	return out
}

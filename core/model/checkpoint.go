package model

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/sbinet/npyio/npz"
	"gorgonia.org/tensor"
)

// Checkpoint layout (a NumPy .npz archive, readable with numpy.load):
//
//	config.json      uint8 array: the Config as JSON
//	param/<name>     weights, float32 or float64, in their true shapes
//	momentum/<name>  SGD momentum buffers, same dtype and shape
const (
	configKey   = "config.json"
	paramPfx    = "param/"
	momentumPfx = "momentum/"
)

// Save writes the configuration, weights and momentum buffers as an .npz
// archive. Load(Save(n)) continues training bit-identically.
func (n *Net) Save(w io.Writer) error {
	cfg, err := json.Marshal(n.cfg)
	if err != nil {
		return fmt.Errorf("model: encoding config: %w", err)
	}
	zw := zip.NewWriter(w)
	if err := writeNpy(zw, configKey, "|u1", []int{len(cfg)}, cfg); err != nil {
		return err
	}
	descr := "<f4"
	if n.dt == tensor.Float64 {
		descr = "<f8"
	}
	for _, p := range n.params {
		for _, e := range []struct {
			pfx string
			t   *tensor.Dense
		}{{paramPfx, p.val}, {momentumPfx, p.mom}} {
			if err := writeNpy(zw, e.pfx+p.name, descr, p.shape, rawLE(e.t)); err != nil {
				return err
			}
		}
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("model: writing checkpoint: %w", err)
	}
	return nil
}

func rawLE(t *tensor.Dense) []byte {
	switch v := t.Data().(type) {
	case []float32:
		b := make([]byte, 0, 4*len(v))
		for _, x := range v {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
		return b
	case []float64:
		b := make([]byte, 0, 8*len(v))
		for _, x := range v {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		}
		return b
	}
	panic("model: unsupported dtype")
}

// writeNpy writes one NPY 1.0 entry (uncompressed, as numpy.savez does).
func writeNpy(zw *zip.Writer, name, descr string, shape []int, data []byte) error {
	dims := make([]string, len(shape))
	for i, s := range shape {
		dims[i] = fmt.Sprint(s)
	}
	sh := strings.Join(dims, ", ")
	if len(shape) == 1 {
		sh += ","
	}
	hdr := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, sh)
	// magic(6) + version(2) + length(2) + header + '\n' is a multiple of 64.
	pad := 63 - (10+len(hdr))%64
	hdr += strings.Repeat(" ", pad) + "\n"
	var buf bytes.Buffer
	buf.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&buf, binary.LittleEndian, uint16(len(hdr)))
	buf.WriteString(hdr)
	buf.Write(data)
	f, err := zw.CreateHeader(&zip.FileHeader{Name: name + ".npy", Method: zip.Store})
	if err == nil {
		_, err = f.Write(buf.Bytes())
	}
	if err != nil {
		return fmt.Errorf("model: writing checkpoint array %q: %w", name, err)
	}
	return nil
}

// Load reads a checkpoint written by Save. Errors name the missing or
// malformed array and what was expected.
func Load(r io.Reader) (*Net, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("model: reading checkpoint: %w", err)
	}
	zr, err := npz.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, fmt.Errorf("model: checkpoint is not an .npz archive: %w", err)
	}
	has := map[string]bool{}
	for _, k := range zr.Keys() {
		has[k] = true
	}
	if !has[configKey+".npy"] {
		return nil, fmt.Errorf("model: checkpoint has no %q array", configKey)
	}
	var raw []uint8
	if err := zr.Read(configKey+".npy", &raw); err != nil {
		return nil, fmt.Errorf("model: checkpoint array %q: %w", configKey, err)
	}
	var cfg Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("model: checkpoint array %q is not a valid config: %w", configKey, err)
	}
	n, err := New(cfg)
	if err != nil {
		return nil, fmt.Errorf("model: checkpoint config: %w", err)
	}
	descr := "<f4"
	if n.dt == tensor.Float64 {
		descr = "<f8"
	}
	for _, p := range n.params {
		for _, e := range []struct {
			key string
			t   *tensor.Dense
		}{{paramPfx + p.name, p.val}, {momentumPfx + p.name, p.mom}} {
			want := fmt.Sprintf("%s %s", n.cfg.Dtype, shapeString(p.shape))
			file := e.key + ".npy"
			if !has[file] {
				return nil, fmt.Errorf("model: checkpoint is missing array %q (want %s)", e.key, want)
			}
			h := zr.Header(file)
			if h == nil {
				return nil, fmt.Errorf("model: checkpoint array %q: unreadable header (want %s)", e.key, want)
			}
			if h.Descr.Type != descr || h.Descr.Fortran || !slices.Equal(h.Descr.Shape, p.shape) {
				order := ""
				if h.Descr.Fortran {
					order = " Fortran-order"
				}
				return nil, fmt.Errorf("model: checkpoint array %q is %s%s %s, want %s",
					e.key, h.Descr.Type, order, shapeString(h.Descr.Shape), want)
			}
			var err error
			switch v := e.t.Data().(type) {
			case []float32:
				err = zr.Read(file, &v)
			case []float64:
				err = zr.Read(file, &v)
			}
			if err != nil {
				return nil, fmt.Errorf("model: checkpoint array %q: %w", e.key, err)
			}
		}
	}
	return n, nil
}

func shapeString(s []int) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = fmt.Sprint(v)
	}
	if len(s) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

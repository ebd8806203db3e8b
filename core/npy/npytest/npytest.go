// Package npytest builds .npz archives from fuzz inputs, so that a fuzzer
// can vary the arrays inside an archive without every mutation breaking a
// CRC-32 and stopping at the zip layer.
package npytest

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"hash/crc32"
	"io"
)

// Member is one file of an archive.
type Member struct {
	Name    string
	Data    []byte
	Deflate bool
}

// Encode writes members in the format Archive reads: per member, a flags
// byte (bit 0: deflate), the name's length (one byte), the name, the
// data's length (uint32, little-endian) and the data.
func Encode(ms ...Member) []byte {
	var b []byte
	for _, m := range ms {
		var flags byte
		if m.Deflate {
			flags = 1
		}
		name := m.Name[:min(len(m.Name), 255)]
		b = append(b, flags, byte(len(name)))
		b = append(b, name...)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(m.Data)))
		b = append(b, m.Data...)
	}
	return b
}

// Decode reads Encode's format; a truncated last member keeps what is
// there.
func Decode(b []byte) []Member {
	var ms []Member
	for len(b) >= 2 {
		m := Member{Deflate: b[0]&1 != 0}
		n := min(int(b[1]), len(b)-2)
		m.Name, b = string(b[2:2+n]), b[2+n:]
		if len(b) >= 4 {
			l := int(min(binary.LittleEndian.Uint32(b), uint32(len(b)-4)))
			m.Data, b = b[4:4+l], b[4+l:]
		} else {
			b = nil
		}
		ms = append(ms, m)
	}
	return ms
}

// Archive zips the members b encodes (see Encode), with correct sizes and
// CRC-32s.
func Archive(b []byte) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, m := range Decode(b) {
		method := zip.Store
		if m.Deflate {
			method = zip.Deflate
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: m.Name, Method: method})
		if err != nil {
			return nil
		}
		w.Write(m.Data)
	}
	if zw.Close() != nil {
		return nil
	}
	return buf.Bytes()
}

// FromNPZ turns an archive into Encode's format (for seed corpora).
func FromNPZ(b []byte) ([]byte, error) {
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, err
	}
	var ms []Member
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, err
		}
		ms = append(ms, Member{Name: f.Name, Data: data, Deflate: f.Method == zip.Deflate})
	}
	return Encode(ms...), nil
}

// WriteZeros adds to zw a deflated member name holding hdr and then n
// zero bytes: a member that inflates to far more than it takes (an
// archive bomb), for the tests of reads bounded by memory. Deflating
// hundreds of MB takes seconds (tens under the race detector), so the
// member is put together from deflate blocks: once the window holds only
// zeros, a flushed MiB of zeros compresses to the same bytes every time,
// and those are repeated.
func WriteZeros(zw *zip.Writer, name string, hdr []byte, n int) error {
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
	w, err := zw.CreateRaw(&zip.FileHeader{Name: name, Method: zip.Deflate, CRC32: crc,
		CompressedSize64: uint64(len(head) + repeat*len(steady) + c.Len()), UncompressedSize64: uint64(len(hdr) + n)})
	if err != nil {
		return err
	}
	w.Write(head)
	for range repeat {
		w.Write(steady)
	}
	_, err = w.Write(c.Bytes())
	return err
}

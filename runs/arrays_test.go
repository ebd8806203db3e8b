package runs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// The byte layout of docs/run-format.md, written out by hand: EncodeRecord
// must produce exactly these bytes, and DecodeRecord read them back.
func TestRecordLayout(t *testing.T) {
	arrays := []Array{
		{Name: "G", DType: Float32, Shape: []int{1, 2}, Data: []float64{0.5, -2}},
		{Name: "v", DType: Float64, Shape: []int{1}, Data: []float64{math.Pi}},
	}
	header := `{"arrays":[{"name":"G","dtype":"<f4","shape":[1,2]},{"name":"v","dtype":"<f8","shape":[1]}]}`
	var want []byte
	want = append(want, 'S', 'X', 'A', '1')
	want = append(want, byte(len(header)), 0, 0, 0)
	want = append(want, header...)
	want = append(want, 0x00, 0x00, 0x00, 0x3f)                         // 0.5 as binary32 little-endian
	want = append(want, 0x00, 0x00, 0x00, 0xc0)                         // -2
	want = append(want, 0x18, 0x2d, 0x44, 0x54, 0xfb, 0x21, 0x09, 0x40) // π as binary64
	sum := crc32.ChecksumIEEE(want)
	want = append(want, byte(sum), byte(sum>>8), byte(sum>>16), byte(sum>>24))

	got, err := EncodeRecord(arrays)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("EncodeRecord =\n%q\nwant\n%q", got, want)
	}
	back, err := DecodeRecord(want)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, arrays) {
		t.Errorf("DecodeRecord = %+v, want %+v", back, arrays)
	}
}

// Float32 arrays come back as float32(v); float64 ones bit for bit,
// non-finite values included.
func TestRecordRoundTrip(t *testing.T) {
	vals := []float64{0, -0.0, 1e-40, 0.1, -123.456789, math.MaxFloat64, math.Inf(1), math.Inf(-1), math.NaN(), 1e300}
	b, err := EncodeRecord([]Array{
		{Name: "f4", DType: Float32, Shape: []int{2, 5}, Data: vals},
		{Name: "f8", DType: Float64, Shape: []int{10}, Data: vals},
		{Name: "empty", DType: Float64, Shape: []int{0}, Data: nil},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		if w := float64(float32(v)); math.Float64bits(got[0].Data[i]) != math.Float64bits(w) && !(math.IsNaN(w) && math.IsNaN(got[0].Data[i])) {
			t.Errorf("f4[%d] = %v, want float32(%v) = %v", i, got[0].Data[i], v, w)
		}
		if math.Float64bits(got[1].Data[i]) != math.Float64bits(v) {
			t.Errorf("f8[%d] = %v, want %v exactly", i, got[1].Data[i], v)
		}
	}
	if len(got[2].Data) != 0 || !reflect.DeepEqual(got[2].Shape, []int{0}) {
		t.Errorf("empty array came back as %+v", got[2])
	}
}

func TestEncodeRecordRejects(t *testing.T) {
	for name, arrays := range map[string][]Array{
		"repeated name": {{Name: "a", DType: Float64, Shape: []int{1}, Data: []float64{1}}, {Name: "a", DType: Float64, Shape: []int{1}, Data: []float64{1}}},
		"empty name":    {{Name: "", DType: Float64, Shape: []int{1}, Data: []float64{1}}},
		"bad dtype":     {{Name: "a", DType: "<i4", Shape: []int{1}, Data: []float64{1}}},
		"short data":    {{Name: "a", DType: Float64, Shape: []int{2, 2}, Data: []float64{1, 2, 3}}},
		"negative dim":  {{Name: "a", DType: Float64, Shape: []int{-1}, Data: nil}},
	} {
		if _, err := EncodeRecord(arrays); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestDecodeRecordErrors(t *testing.T) {
	good, err := EncodeRecord([]Array{{Name: "x", DType: Float64, Shape: []int{3}, Data: []float64{1, 2, 3}}})
	if err != nil {
		t.Fatal(err)
	}
	// reseal recomputes the checksum, so the check behind it is reached.
	reseal := func(b []byte) []byte {
		binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.ChecksumIEEE(b[:len(b)-4]))
		return b
	}
	mutate := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	hlen := int(binary.LittleEndian.Uint32(good[4:8]))
	for _, c := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "shorter than any record"},
		{"truncated", good[:len(good)-5], "checksum mismatch"},
		{"bad magic", mutate(func(b []byte) []byte { b[0] = 'X'; return b }), "bad magic"},
		{"flipped payload bit", mutate(func(b []byte) []byte { b[len(b)-6] ^= 1; return b }), "checksum mismatch"},
		{"header too long", mutate(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[4:], 1<<30); return reseal(b) }), "header length"},
		{"header not JSON", mutate(func(b []byte) []byte { b[8] = '['; return reseal(b) }), "header"},
		{"shape too big", mutate(func(b []byte) []byte {
			return reseal(bytes.Replace(b, []byte(`[3]`), []byte(`[9]`), 1))
		}), "larger than the record"},
		{"trailing bytes", mutate(func(b []byte) []byte {
			return reseal(bytes.Replace(b, []byte(`[3]`), []byte(`[2]`), 1))
		}), "after the last array"},
		{"bad dtype", mutate(func(b []byte) []byte {
			return reseal(bytes.Replace(b, []byte(`<f8`), []byte(`<i8`), 1))
		}), "unknown dtype"},
	} {
		_, err := DecodeRecord(c.b)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	if hlen < 10 {
		t.Fatalf("header of %d bytes: the cases above assume a real one", hlen)
	}
}

func FuzzDecodeRecord(f *testing.F) {
	good, _ := EncodeRecord([]Array{{Name: "x", DType: Float32, Shape: []int{2, 2}, Data: []float64{1, 2, 3, 4}}})
	f.Add(good)
	f.Add([]byte("SXA1\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		arrs, err := DecodeRecord(b)
		// What decodes, the header check (Check's want) reads the same
		// names, dtypes and shapes of; it never panics on the rest.
		var shapes []Array
		var serr error
		if checkRecord(b) == nil {
			shapes, serr = recordShapes(b)
		}
		if err != nil {
			return
		}
		if serr != nil || len(shapes) != len(arrs) {
			t.Fatalf("decoded %d arrays, the header check %d (%v)", len(arrs), len(shapes), serr)
		}
		for i := range arrs {
			if shapes[i].Name != arrs[i].Name || shapes[i].DType != arrs[i].DType || !reflect.DeepEqual(shapes[i].Shape, arrs[i].Shape) || shapes[i].Data != nil {
				t.Fatalf("array %d: header check %+v, decoded %+v", i, shapes[i], arrs[i])
			}
		}
		// Whatever decodes re-encodes to the same bytes up to float32
		// rounding, which is the identity on values read from binary32.
		again, err := EncodeRecord(arrs)
		if err != nil {
			t.Fatalf("decoded %+v does not re-encode: %v", arrs, err)
		}
		if back, err := DecodeRecord(again); err != nil || len(back) != len(arrs) {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
	})
}

func vec(name string, vals ...float64) []Array {
	return []Array{{Name: name, DType: Float64, Shape: []int{len(vals)}, Data: vals}}
}

// AppendArrays writes the records, then the event naming them; readers
// find each record by its reference.
func TestAppendArrays(t *testing.T) {
	root := t.TempDir()
	w := mustCreate(t, root, "arrays", Meta{})
	if _, err := w.Append("plain", 0, nil, true); err != nil {
		t.Fatal(err)
	}
	ev1, err := w.AppendArrays("two", 1, map[string]int{"i": 1}, [][]Array{vec("a", 1, 2), vec("b", 3)}, true)
	if err != nil {
		t.Fatal(err)
	}
	ev2, err := w.AppendArrays("one", 2, nil, [][]Array{vec("c", 4)}, true)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if len(ev1.Arrays) != 2 || ev1.Arrays[0].Offset != 0 || ev1.Arrays[1].Offset != ev1.Arrays[0].Length ||
		ev2.Arrays[0].Offset != ev1.Arrays[1].Offset+ev1.Arrays[1].Length {
		t.Fatalf("refs %v then %v: records are not back to back from 0", ev1.Arrays, ev2.Arrays)
	}
	evs, _ := readLog(t, w.Dir())
	if !reflect.DeepEqual(evs[1].Arrays, ev1.Arrays) || evs[0].Arrays != nil {
		t.Fatalf("log has refs %v and %v, want none and %v", evs[0].Arrays, evs[1].Arrays, ev1.Arrays)
	}
	r, err := Open(root, w.ID())
	if err != nil {
		t.Fatal(err)
	}
	if r.Meta.Format != Format {
		t.Errorf("new run has format %d, want %d", r.Meta.Format, Format)
	}
	for _, c := range []struct {
		ref  Ref
		name string
		want []float64
	}{{ev1.Arrays[0], "a", []float64{1, 2}}, {ev1.Arrays[1], "b", []float64{3}}, {ev2.Arrays[0], "c", []float64{4}}} {
		got, err := r.ReadArrays(c.ref)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Name != c.name || !reflect.DeepEqual(got[0].Data, c.want) {
			t.Errorf("record at %d = %+v, want %s = %v", c.ref.Offset, got, c.name, c.want)
		}
	}
	fi, _ := os.Stat(filepath.Join(w.Dir(), arraysName))
	if end := ev2.Arrays[0].Offset + ev2.Arrays[0].Length; fi.Size() != end {
		t.Errorf("arrays.bin is %d bytes, want %d", fi.Size(), end)
	}
}

// A crash between a record and its event leaves a record nobody refers
// to: readers ignore it, and OpenWriter cuts it so the next record lands
// where an uninterrupted run has it.
func TestArraysTornTail(t *testing.T) {
	root := t.TempDir()
	w := mustCreate(t, root, "torn", Meta{})
	ev, err := w.AppendArrays("x", 0, nil, [][]Array{vec("a", 1)}, true)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	end := ev.Arrays[0].Offset + ev.Arrays[0].Length
	orphan, _ := EncodeRecord(vec("orphan", 9, 9, 9))
	path := filepath.Join(w.Dir(), arraysName)
	for _, tail := range [][]byte{orphan, orphan[:7], []byte("junk")} {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(tail)
		f.Close()
		r, _ := Open(root, w.ID())
		if got, err := r.ReadArrays(ev.Arrays[0]); err != nil || got[0].Data[0] != 1 {
			t.Fatalf("reader with a torn sidecar tail: %v %v", got, err)
		}
		w2, err := OpenWriter(root, w.ID())
		if err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Stat(path); fi.Size() != end {
			t.Errorf("OpenWriter left arrays.bin at %d bytes, want %d", fi.Size(), end)
		}
		ev2, err := w2.AppendArrays("x", 1, nil, [][]Array{vec("b", 2)}, true)
		if err != nil {
			t.Fatal(err)
		}
		if ev2.Arrays[0].Offset != end {
			t.Errorf("next record at %d, want %d", ev2.Arrays[0].Offset, end)
		}
		end = ev2.Arrays[0].Offset + ev2.Arrays[0].Length
		w2.Close()
	}
}

// A sidecar shorter than its events say is not a torn tail but lost data:
// OpenWriter refuses to write on, and a reader names file, offset and why.
func TestArraysMissingRecord(t *testing.T) {
	root := t.TempDir()
	w := mustCreate(t, root, "short", Meta{})
	ev, err := w.AppendArrays("x", 0, nil, [][]Array{vec("a", 1, 2, 3)}, true)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	path := filepath.Join(w.Dir(), arraysName)
	if err := os.Truncate(path, ev.Arrays[0].Length-3); err != nil {
		t.Fatal(err)
	}
	r, _ := Open(root, w.ID())
	_, err = r.ReadArrays(ev.Arrays[0])
	if err == nil || !strings.Contains(err.Error(), path+": record at offset 0: missing") || !errors.Is(err, ErrDamaged) {
		t.Errorf("read of a cut record: %v", err)
	}
	if _, err := OpenWriter(root, w.ID()); err == nil || !strings.Contains(err.Error(), "refers to records up to byte") {
		t.Errorf("OpenWriter on a cut sidecar: %v", err)
	}
	// A flipped byte is corrupt, not missing.
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	b, _ := EncodeRecord(vec("a", 1, 2, 3))
	b[len(b)-7] ^= 0x10
	os.WriteFile(path, b, 0o644)
	if _, err := r.ReadArrays(ev.Arrays[0]); err == nil || !strings.Contains(err.Error(), "record at offset 0: corrupt: checksum mismatch") || !errors.Is(err, ErrDamaged) {
		t.Errorf("read of a changed record: %v", err)
	}
	// Check finds the same damage without decoding, and passes the record
	// once it is whole again.
	af, err := r.OpenArrays()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := af.Check(ev.Arrays[0], nil, nil); err == nil || !strings.Contains(err.Error(), path+": record at offset 0: corrupt: checksum mismatch") || !errors.Is(err, ErrDamaged) {
		t.Errorf("check of a changed record: %v", err)
	}
	b[len(b)-7] ^= 0x10
	os.WriteFile(path, b, 0o644)
	if buf, err := af.Check(ev.Arrays[0], make([]byte, 0, 4), nil); err != nil || len(buf) != len(b) {
		t.Errorf("check of the whole record: %d bytes, %v", len(buf), err)
	}
	// Check hands want the record's arrays without their data; what it
	// refuses is damage.
	var got []Array
	_, err = af.Check(ev.Arrays[0], nil, func(arrs []Array) error { got = arrs; return errors.New("not the record wanted") })
	if len(got) != 1 || got[0].Name != "a" || got[0].DType != Float64 || !reflect.DeepEqual(got[0].Shape, []int{3}) || got[0].Data != nil ||
		!errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), path+": record at offset 0: not the record wanted") {
		t.Errorf("check with want: arrays %+v, error %v", got, err)
	}
	af.Close()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadArrays(ev.Arrays[0]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("read with no sidecar: %v", err)
	}
}

// A failed write leaves both files as they were, whether the record or
// its event failed; once the disk recovers the run goes on.
func TestAppendArraysWriteErrors(t *testing.T) {
	for _, c := range []struct {
		name     string
		arrFault *faultyFile // on arrays.bin
		logFault *faultyFile // on the log
		want     error
	}{
		{"record half written", &faultyFile{budget: 20}, nil, syscall.ENOSPC},
		{"record fsync fails", &faultyFile{budget: -1, syncErr: syscall.EIO}, nil, syscall.EIO},
		{"event fails after its record", nil, &faultyFile{budget: 5}, syscall.ENOSPC},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			w := mustCreate(t, root, "full", Meta{})
			defer w.Close()
			if _, err := w.AppendArrays("x", 0, nil, [][]Array{vec("a", 1)}, true); err != nil {
				t.Fatal(err)
			}
			logPath, arrPath := filepath.Join(w.Dir(), eventsName), filepath.Join(w.Dir(), arraysName)
			logBefore, _ := os.ReadFile(logPath)
			arrBefore, _ := os.ReadFile(arrPath)
			w.mu.Lock()
			if c.arrFault != nil {
				c.arrFault.file = w.arr
				w.arr = c.arrFault
			}
			if c.logFault != nil {
				c.logFault.file = w.log
				w.log = c.logFault
			}
			w.mu.Unlock()
			_, err := w.AppendArrays("x", 1, nil, [][]Array{vec("b", 1, 2, 3, 4, 5)}, true)
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
			if logAfter, _ := os.ReadFile(logPath); !bytes.Equal(logAfter, logBefore) {
				t.Error("the log changed")
			}
			if arrAfter, _ := os.ReadFile(arrPath); !bytes.Equal(arrAfter, arrBefore) {
				t.Errorf("arrays.bin changed: %d bytes, was %d", len(arrAfter), len(arrBefore))
			}
			w.uninject()
			ev, err := w.AppendArrays("x", 1, nil, [][]Array{vec("b", 2)}, true)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Arrays[0].Offset != int64(len(arrBefore)) || ev.Seq != 2 {
				t.Errorf("after recovery: seq %d, record at %d; want 2 at %d", ev.Seq, ev.Arrays[0].Offset, len(arrBefore))
			}
		})
	}
}

// Format 1 runs (no "format" in run.json) read as format 1; new runs say 2.
func TestMetaFormat(t *testing.T) {
	m, err := parseMeta([]byte(`{"id":"a","created":"2026-01-01T00:00:00Z","status":"finished"}`), "run.json")
	if err != nil || m.Format != 1 {
		t.Errorf("run.json without format: %d, %v; want format 1", m.Format, err)
	}
	m, err = parseMeta([]byte(`{"format":2,"id":"a","created":"2026-01-01T00:00:00Z","status":"finished"}`), "run.json")
	if err != nil || m.Format != 2 {
		t.Errorf("format 2: %d, %v", m.Format, err)
	}
	if _, err := parseMeta([]byte(`{"format":-1,"id":"a","created":"2026-01-01T00:00:00Z","status":"finished"}`), "run.json"); err == nil {
		t.Error("format -1 accepted")
	}
}

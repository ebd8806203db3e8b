package data

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
	"testing"
)

func imageSet() Set {
	s := Set{X: make([]float32, 12), Y: []int{0, 3, 9}, N: 3, Dim: 4}
	for i := range s.X {
		s.X[i] = pixel(byte(i * 23))
	}
	return s
}

func TestSaveLoadSetRoundTrip(t *testing.T) {
	tests := []struct {
		name       string
		s          Set
		xEnc, yEnc byte
		size       int
	}{
		{"images", imageSet(), xUint8, yUint8, setHeaderLen + 12 + 3 + 4},
		{"features", Set{X: []float32{-1.5, 0.1, 3e7, 0}, Y: []int{1, 300}, N: 2, Dim: 2}, xFloat32, yUint16, setHeaderLen + 16 + 4 + 4},
		{"unknown labels", Set{X: []float32{1, 0}, Y: []int{-1, 70000}, N: 2, Dim: 1}, xUint8, yInt32, setHeaderLen + 2 + 8 + 4},
		// 0.5 is in [0,1] but not k/255, so the set must stay float32.
		{"not quite pixels", Set{X: []float32{0.5, 1}, Y: []int{0, 1}, N: 2, Dim: 1}, xFloat32, yUint8, setHeaderLen + 8 + 2 + 4},
		{"empty", Set{X: []float32{}, Y: []int{}, N: 0, Dim: 5}, xUint8, yUint8, setHeaderLen + 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := SaveSet(&buf, tc.s); err != nil {
				t.Fatal(err)
			}
			b := buf.Bytes()
			if len(b) != tc.size || b[10] != tc.xEnc || b[11] != tc.yEnc {
				t.Errorf("encoded %d bytes with encodings (%d,%d), want %d bytes (%d,%d)", len(b), b[10], b[11], tc.size, tc.xEnc, tc.yEnc)
			}
			got, err := LoadSet(&buf)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.s) {
				t.Errorf("round trip = %+v, want %+v", got, tc.s)
			}
		})
	}
}

func TestLoadSetConsumesExactly(t *testing.T) {
	a, b := imageSet(), Set{X: []float32{2.5}, Y: []int{1}, N: 1, Dim: 1}
	var buf bytes.Buffer
	SaveSet(&buf, a)
	SaveSet(&buf, b)
	gotA, errA := LoadSet(&buf)
	gotB, errB := LoadSet(&buf)
	if errA != nil || errB != nil || !reflect.DeepEqual(gotA, a) || !reflect.DeepEqual(gotB, b) {
		t.Fatalf("back-to-back sets: %v %v", errA, errB)
	}
}

func TestLoadSetCorruption(t *testing.T) {
	var buf bytes.Buffer
	if err := SaveSet(&buf, Set{X: []float32{0.25, -1, 7, 0}, Y: []int{0, 1}, N: 2, Dim: 2}); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	// Every single-byte change is detected (by a header check or the CRC).
	for i := range good {
		bad := bytes.Clone(good)
		bad[i] ^= 0x41
		if _, err := LoadSet(bytes.NewReader(bad)); err == nil {
			t.Errorf("flipping byte %d went undetected", i)
		}
	}
	// Every truncation is detected.
	for n := range len(good) {
		if _, err := LoadSet(bytes.NewReader(good[:n])); err == nil {
			t.Errorf("truncation to %d bytes went undetected", n)
		}
	}
	bad := bytes.Clone(good)
	bad[setHeaderLen] ^= 1
	if _, err := LoadSet(bytes.NewReader(bad)); !errors.Is(err, ErrChecksum) {
		t.Errorf("payload flip: err = %v, want ErrChecksum", err)
	}
	// A NaN with a valid checksum is still rejected, naming the row.
	nan := bytes.Clone(good[:len(good)-4])
	binary.LittleEndian.PutUint32(nan[setHeaderLen+12:], math.Float32bits(float32(math.NaN())))
	nan = binary.LittleEndian.AppendUint32(nan, crc32.ChecksumIEEE(nan))
	if _, err := LoadSet(bytes.NewReader(nan)); err == nil || !strings.Contains(err.Error(), "row 1, column 1") {
		t.Errorf("NaN: err = %v", err)
	}
	// A forged huge shape fails fast instead of allocating.
	huge := bytes.Clone(good)
	binary.LittleEndian.PutUint64(huge[12:], 1<<40)
	if _, err := LoadSet(bytes.NewReader(huge)); err == nil || !strings.Contains(err.Error(), "implausible shape") {
		t.Errorf("huge: err = %v", err)
	}
}

func TestSaveSetRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Set
		want string
	}{
		{"NaN", Set{X: []float32{0, float32(math.NaN())}, Y: []int{0}, N: 1, Dim: 2}, "row 0, column 1"},
		{"shape", Set{X: []float32{0}, Y: []int{0}, N: 1, Dim: 2}, "len(X)=1"},
		{"labels", Set{X: []float32{0}, Y: []int{}, N: 1, Dim: 1}, "len(Y)=0"},
	} {
		if err := SaveSet(&bytes.Buffer{}, tc.s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func testSplit(t testing.TB) *Split {
	raw := synthRaw(4, 60, 10)
	for i := range raw.Train.X {
		raw.Train.X[i] = pixel(byte(i))
	}
	sp, err := BuildLT(raw, SplitConfig{N1: 20, RhoL: 10, M1: 10, UnlabeledMode: UnlabeledUniform, ValPerClass: 5, TestPerClass: 3, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// exported returns sp without its unexported bookkeeping, which is not
// stored.
func exported(sp *Split) Split {
	return Split{Labeled: sp.Labeled, Unlabeled: sp.Unlabeled, Val: sp.Val, Test: sp.Test, K: sp.K, ClassNames: sp.ClassNames, TrainCounts: sp.TrainCounts}
}

func TestSaveLoadSplit(t *testing.T) {
	sp := testSplit(t)
	path := filepath.Join(t.TempDir(), "split.bin")
	if err := SaveSplit(path, sp); err != nil {
		t.Fatal(err)
	}
	got, err := LoadSplit(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(exported(got), exported(sp)) {
		t.Errorf("round trip differs:\n got %+v\nwant %+v", exported(got), exported(sp))
	}
	// No temporary files are left behind.
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("directory holds %d entries, want only split.bin", len(ents))
	}

	b, _ := os.ReadFile(path)
	for i := range b {
		bad := bytes.Clone(b)
		bad[i] ^= 0x10
		if _, err := LoadSplitBytes(bad); err == nil {
			t.Errorf("flipping byte %d went undetected", i)
		}
	}
	for _, n := range []int{0, 7, 12, len(b) / 2, len(b) - 1} {
		if _, err := LoadSplitBytes(b[:n]); err == nil {
			t.Errorf("truncation to %d bytes went undetected", n)
		}
	}
	bad := bytes.Clone(b)
	bad[len(bad)/2] ^= 1
	if _, err := LoadSplitBytes(bad); !errors.Is(err, ErrChecksum) {
		t.Errorf("err = %v, want ErrChecksum", err)
	}
	if err := os.WriteFile(path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSplit(path); err == nil || !strings.Contains(err.Error(), "split.bin") {
		t.Errorf("LoadSplit error should name the file: %v", err)
	}
}

func TestSaveSplitRejectsInconsistent(t *testing.T) {
	sp := testSplit(t)
	sp.TrainCounts[1]++
	if _, err := MarshalSplit(sp); err == nil || !strings.Contains(err.Error(), "TrainCounts[1]") {
		t.Errorf("err = %v", err)
	}
	sp = testSplit(t)
	sp.Val.Y[0] = 4
	if _, err := MarshalSplit(sp); err == nil || !strings.Contains(err.Error(), "val set: label 4 at index 0") {
		t.Errorf("err = %v", err)
	}
	sp = testSplit(t)
	sp.ClassNames = sp.ClassNames[:2]
	if err := SaveSplit(filepath.Join(t.TempDir(), "x"), sp); err == nil {
		t.Error("2 names for K=4 accepted")
	}
}

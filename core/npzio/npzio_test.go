package npzio

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.npz")
	in := []Array{
		{Name: "psi", Data: []float64{0.75}},
		{Name: "v", Shape: []int{3}, Data: []float64{1, -2, 3.5}},
		{Name: "M", Shape: []int{2, 3}, Data: []float64{1, 2, 3, 4, 5, 6}},
		{Name: "empty", Shape: []int{0}, Data: []float64{}},
	}
	if err := Write(path, in); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got, want := strings.Join(f.Keys(), ","), "M,empty,psi,v"; got != want {
		t.Errorf("keys = %s, want %s", got, want)
	}
	cases := []struct {
		key   string
		shape []int
		want  []float64
	}{
		{"psi", nil, []float64{0.75}},
		{"v", []int{3}, []float64{1, -2, 3.5}},
		{"M", []int{2, 3}, []float64{1, 2, 3, 4, 5, 6}},
		{"M", []int{-1, -1}, []float64{1, 2, 3, 4, 5, 6}},
		{"empty", []int{-1}, []float64{}},
	}
	for _, c := range cases {
		got, _, err := f.Float64(c.key, c.shape...)
		if err != nil {
			t.Errorf("%s: %v", c.key, err)
			continue
		}
		if len(got) != len(c.want) {
			t.Errorf("%s: got %v, want %v", c.key, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s[%d] = %v, want %v", c.key, i, got[i], c.want[i])
			}
		}
	}
}

func TestErrors(t *testing.T) {
	var buf bytes.Buffer
	if err := Encode(&buf, []Array{{Name: "M", Shape: []int{2, 2}, Data: []float64{1, 2, 3, 4}}}); err != nil {
		t.Fatal(err)
	}
	f, err := OpenBytes("s.npz", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		key   string
		shape []int
		want  string
	}{
		{"missing", "Z", []int{2, 2}, `s.npz: missing key "Z" (has M)`},
		{"rank", "M", []int{4}, `s.npz: key "M": expected 1-D array of shape (4), got shape [2 2]`},
		{"dim", "M", []int{2, 3}, `s.npz: key "M": expected shape (2, 3), got [2 2]`},
	}
	for _, c := range cases {
		_, _, err := f.Float64(c.key, c.shape...)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: err = %v, want %s", c.name, err, c.want)
		}
	}
	if _, err := OpenBytes("junk.npz", []byte("not a zip")); err == nil || !strings.HasPrefix(err.Error(), "junk.npz: not an .npz archive") {
		t.Errorf("junk: err = %v", err)
	}
}

func FuzzFloat64(f *testing.F) {
	var buf bytes.Buffer
	Encode(&buf, []Array{{Name: "M", Shape: []int{2, 2}, Data: []float64{1, 2, 3, 4}}, {Name: "s", Data: []float64{1}}})
	f.Add(buf.Bytes())
	f.Add([]byte("PK\x03\x04"))
	f.Fuzz(func(t *testing.T, b []byte) {
		nf, err := OpenBytes("f.npz", b)
		if err != nil {
			return
		}
		for _, k := range nf.Keys() {
			data, shape, err := nf.Float64(k, -1, -1)
			if err != nil {
				continue
			}
			if len(data) != shape[0]*shape[1] {
				t.Fatalf("key %s: %d values for shape %v", k, len(data), shape)
			}
		}
	})
}

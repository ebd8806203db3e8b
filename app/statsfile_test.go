package app

import (
	"bytes"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"selmix/core/loop"
	"selmix/core/npy"
	"selmix/core/npy/npytest"
	"selmix/core/train"
)

// statsEntries is a valid statistics archive's content: a joint
// confusion matrix with an imbalanced prior, centroids, a head and, with
// counts, training counts.
func statsEntries(K, d int, seed uint64, counts bool) []npy.Entry {
	r := rand.New(rand.NewPCG(seed, 1))
	C := make([]float64, K*K)
	sum := 0.0
	for i := range K {
		for j := range K {
			C[i*K+j] = r.Float64() * 0.2
			if i == j {
				C[i*K+j] += 1 + float64(K-i)
			}
			sum += C[i*K+j]
		}
	}
	for i := range C {
		C[i] /= sum // a joint distribution
	}
	norm := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = r.NormFloat64()
		}
		return v
	}
	es := []npy.Entry{
		{Name: "C", Shape: []int{K, K}, Data: C},
		{Name: "Z", Shape: []int{K, d}, Data: norm(K * d)},
		{Name: "W", Shape: []int{d, K}, Data: norm(d * K)},
		{Name: "b", Shape: []int{K}, Data: norm(K)},
	}
	if counts {
		tc := make([]float64, K)
		for k := range tc {
			tc[k] = float64(100 * (k + 1)) // the reverse of C's prior
		}
		es = append(es, npy.Entry{Name: "train_counts", Shape: []int{K}, Data: tc})
	}
	return es
}

// ReadStats reads what was written; the head/tail split follows the
// training counts when there are some, else C's row sums.
func TestReadStats(t *testing.T) {
	for _, counts := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "s.npz")
		es := statsEntries(4, 3, 1, counts)
		if err := npy.WriteNPZ(path, es...); err != nil {
			t.Fatal(err)
		}
		st, err := ReadStats(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.K != 4 || st.D != 3 || st.C.At(1, 1) != es[0].Data.([]float64)[5] || st.B[3] != es[3].Data.([]float64)[3] {
			t.Errorf("counts %v: K %d d %d C11 %v b3 %v", counts, st.K, st.D, st.C.At(1, 1), st.B[3])
		}
		tail := st.Stats().Tail
		// C's prior falls with the class index and the counts rise: the
		// tail is the last classes by C, the first by counts.
		if want := !counts; tail[3] != want || tail[0] == want {
			t.Errorf("counts %v: tail %v", counts, tail)
		}
	}
	path := filepath.Join(t.TempDir(), "bad.npz")
	es := statsEntries(3, 2, 1, false)
	es[2].Shape = []int{3, 2} // W must be d×K = 2×3
	if err := npy.WriteNPZ(path, es...); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadStats(path); err == nil || !strings.Contains(err.Error(), path+": member \"W.npy\": expected shape (2, 3), got (3, 2)") {
		t.Errorf("W of the wrong shape: %v", err)
	}
}

func FuzzReadStats(f *testing.F) {
	var buf bytes.Buffer
	z := npy.NewNPZWriter(&buf)
	for _, e := range statsEntries(3, 2, 1, true) {
		z.Add(e.Name, e.Shape, e.Data)
	}
	z.Close()
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		checkStats(t, b)
		checkStats(t, npytest.Archive(b))
	})
}

// checkStats reads archive b as statistics and checks what it gets.
func checkStats(t *testing.T, b []byte) {
	ar, err := npy.NewNPZ("s.npz", bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return
	}
	st, err := StatsFromNPZ(ar)
	if err != nil {
		return
	}
	if r, c := st.C.Dims(); r != st.K || c != st.K || st.K < 2 {
		t.Fatalf("C is %d×%d for K=%d", r, c, st.K)
	}
	if r, c := st.Z.Dims(); r != st.K || c != st.D {
		t.Fatalf("Z is %d×%d for K=%d, d=%d", r, c, st.K, st.D)
	}
	if r, c := st.W.Dims(); r != st.D || c != st.K || len(st.B) != st.K {
		t.Fatalf("W is %d×%d, b has %d for K=%d, d=%d", r, c, len(st.B), st.K, st.D)
	}
	if st.TrainCounts != nil && len(st.TrainCounts) != st.K {
		t.Fatalf("%d train counts for K=%d", len(st.TrainCounts), st.K)
	}
}

// Decision.WriteNPZ writes G, P, D, lambda and psi as computed.
func TestDecisionWriteNPZ(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "s.npz")
	if err := npy.WriteNPZ(in, statsEntries(3, 4, 2, true)...); err != nil {
		t.Fatal(err)
	}
	st, err := ReadStats(in)
	if err != nil {
		t.Fatal(err)
	}
	d, err := train.Decide(nil, st.Stats(), loop.DefaultHyper())
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "g.npz")
	if err := WriteDecision(out, d); err != nil {
		t.Fatal(err)
	}
	z, err := npy.OpenNPZ(out)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	for _, c := range []struct {
		key  string
		want []float64
	}{{"G", d.G.RawMatrix().Data}, {"P", d.P.RawMatrix().Data}, {"D", d.Eval.D.RawMatrix().Data}, {"lambda", d.Eval.Lambda}, {"psi", []float64{d.Eval.Psi}}} {
		var got []float64
		switch c.key {
		case "psi":
			got, _, err = z.Float64s(c.key)
		case "lambda":
			got, _, err = z.Float64s(c.key, -1)
		default:
			got, _, err = z.Float64s(c.key, 3, 3)
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: %v (%v), want %v", c.key, got, err, c.want)
		}
	}
}

package cli

import (
	"archive/zip"
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"selmix/core/gain"
	"selmix/core/metric"
	"selmix/core/npy"
)

// randomStats is a valid STATS.npz content: a joint confusion matrix with
// an imbalanced prior, centroids, a head and training counts.
func randomStats(K, d int, seed uint64) []npy.Entry {
	r := rand.New(rand.NewPCG(seed, 1))
	C := make([]float64, K*K)
	sum := 0.0
	for i := 0; i < K; i++ {
		for j := 0; j < K; j++ {
			v := r.Float64() * 0.2
			if i == j {
				v += 1 + float64(K-i)
			}
			C[i*K+j] = v
			sum += v
		}
	}
	for i := range C {
		C[i] /= sum
	}
	norm := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = r.NormFloat64()
		}
		return v
	}
	counts := make([]float64, K)
	for k := range counts {
		counts[k] = float64(100 * (K - k))
	}
	return []npy.Entry{
		{Name: "C", Shape: []int{K, K}, Data: C},
		{Name: "Z", Shape: []int{K, d}, Data: norm(K * d)},
		{Name: "W", Shape: []int{d, K}, Data: norm(d * K)},
		{Name: "b", Shape: []int{K}, Data: norm(K)},
		{Name: "train_counts", Shape: []int{K}, Data: counts},
	}
}

// f64 is the data of a float64 entry.
func f64(e npy.Entry) []float64 { return e.Data.([]float64) }

func runCLI(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = Main(args, &o, &e)
	return code, o.String(), e.String()
}

// The command's output equals the library computed directly, for every
// objective and both forms.
func TestGainCommandMatchesLibrary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const K, d = 5, 7
	in := randomStats(K, d, 3)
	stats := filepath.Join(dir, "stats.npz")
	if err := npy.WriteNPZ(stats, in...); err != nil {
		t.Fatal(err)
	}
	C := mat.NewDense(K, K, f64(in[0]))
	Z := mat.NewDense(K, d, f64(in[1]))
	W := mat.NewDense(d, K, f64(in[2]))
	b := f64(in[3])
	tail := metric.TailSplit(f64(in[4]))
	for _, obj := range metric.Objectives() {
		for _, form := range []string{"paper", "official"} {
			out := filepath.Join(dir, "out.npz")
			code, _, stderr := runCLI("gain", "--stats", stats, "--objective", string(obj), "--form", form, "--s", "3", "--out", out)
			if code != 0 {
				t.Fatalf("%s/%s: exit %d: %s", obj, form, code, stderr)
			}
			f, err := npy.OpenNPZ(out)
			if err != nil {
				t.Fatal(err)
			}
			p := metric.Params{Alpha: 0.95, Tau: 0.01, LambdaMax: 100}.WithDefaults(K)
			ev, err := metric.Evaluate(obj, C, tail, p)
			if err != nil {
				t.Fatal(err)
			}
			fm, _ := gain.ParseForm(form)
			G := mat.NewDense(K, K, nil)
			var gc gain.Computer
			if err := gc.Gain(G, ev.D, Z, W, b, gain.BetaBar(0.6), fm); err != nil {
				t.Fatal(err)
			}
			P := mat.NewDense(K, K, nil)
			gain.Distribution(P, G, 3, gain.SelMix)
			for _, c := range []struct {
				key  string
				want []float64
			}{{"G", G.RawMatrix().Data}, {"P", P.RawMatrix().Data}, {"D", ev.D.RawMatrix().Data}, {"lambda", ev.Lambda}, {"psi", []float64{ev.Psi}}} {
				var got []float64
				if c.key == "psi" {
					got, _, err = f.Float64s(c.key)
				} else if c.key == "lambda" {
					got, _, err = f.Float64s(c.key, -1)
				} else {
					got, _, err = f.Float64s(c.key, K, K)
				}
				if err != nil {
					t.Fatalf("%s/%s: %v", obj, form, err)
				}
				if len(got) != len(c.want) {
					t.Fatalf("%s/%s %s: %d values, want %d", obj, form, c.key, len(got), len(c.want))
				}
				for i := range got {
					if got[i] != c.want[i] {
						t.Fatalf("%s/%s %s[%d] = %v, want %v", obj, form, c.key, i, got[i], c.want[i])
					}
				}
			}
			f.Close()
		}
	}
}

func TestGainCommandErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, arrays []npy.Entry) string {
		p := filepath.Join(dir, name)
		if err := npy.WriteNPZ(p, arrays...); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := randomStats(3, 4, 1)
	without := func(key string) []npy.Entry {
		var out []npy.Entry
		for _, a := range good {
			if a.Name != key {
				out = append(out, a)
			}
		}
		return out
	}
	replace := func(key string, a npy.Entry) []npy.Entry {
		out := without(key)
		a.Name = key
		return append(out, a)
	}
	nanC := append([]float64(nil), f64(good[0])...)
	nanC[4] = math.NaN()
	zeroRow := make([]float64, 9)
	zeroRow[0], zeroRow[4] = 0.5, 0.5
	cases := []struct {
		name  string
		stats string
		args  []string
		want  string
	}{
		{"missing Z", write("noZ.npz", without("Z")), nil, `missing array "Z"`},
		{"W shape", write("w.npz", replace("W", npy.Entry{Shape: []int{3, 4}, Data: make([]float64, 12)})), nil, `member "W.npy": expected shape (4, 3), got (3, 4)`},
		{"C not square", write("c.npz", replace("C", npy.Entry{Shape: []int{3, 2}, Data: make([]float64, 6)})), nil, `member "C.npy": expected a square K×K matrix`},
		{"b rank", write("b.npz", replace("b", npy.Entry{Shape: []int{1, 3}, Data: make([]float64, 3)})), nil, `member "b.npy": expected a 1-D array`},
		{"NaN in C", write("nan.npz", replace("C", npy.Entry{Shape: []int{3, 3}, Data: nanC})), nil, `member "C.npy": entry 4 is NaN`},
		{"empty class", write("zero.npz", replace("C", npy.Entry{Shape: []int{3, 3}, Data: zeroRow})), nil, `member "C.npy"`},
		{"not npz", write("x.npz", nil) + ".missing", nil, "no such file"},
		{"bad objective", write("ok.npz", good), []string{"--objective", "best"}, "--objective"},
		{"bad form", write("ok2.npz", good), []string{"--form", "fast"}, "--form"},
		{"bad beta", write("ok3.npz", good), []string{"--beta-min", "2"}, "--beta-min"},
		{"bad confidence", write("ok4.npz", good), []string{"--cov-conf", "1"}, "--cov-conf"},
		{"negative margin", write("ok5.npz", good), []string{"--cov-margin", "-0.01"}, "--cov-margin"},
		{"margin auto without n", write("ok6.npz", good), []string{"--cov-margin", "auto"}, "--cov-margin auto"},
	}
	for _, c := range cases {
		args := []string{"gain", "--stats", c.stats, "--out", filepath.Join(dir, "o.npz"), "--objective", "min-recall"}
		args = append(args, c.args...)
		code, _, stderr := runCLI(args...)
		if code != 2 {
			t.Errorf("%s: exit %d, want 2 (stderr %q)", c.name, code, stderr)
		}
		if !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%s: stderr %q, want one line containing %q", c.name, stderr, c.want)
		}
	}
	// Float32 arrays are a dtype error, named.
	p := filepath.Join(dir, "f32.npz")
	if err := writeFloat32(p); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI("gain", "--stats", p, "--objective", "hmean", "--out", filepath.Join(dir, "o.npz"))
	if code != 2 || !strings.Contains(stderr, `member "C.npy": expected dtype float64 (<f8), got <f4`) {
		t.Errorf("float32: exit %d, stderr %q", code, stderr)
	}
}

// Damaged statistics files: one line naming the file and the member, exit
// 2, never a panic (the malformed header used to panic inside npyio) and
// never wrong numbers (a flipped byte used to pass).
func TestGainCorruptStats(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.npz")
	if err := npy.WriteNPZ(good, randomStats(3, 4, 1)...); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	off, err := zr.File[0].DataOffset() // C.npy
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(b)
	flipped[off+int64(zr.File[0].UncompressedSize64)-1] ^= 0x40

	var malformed bytes.Buffer
	zw := zip.NewWriter(&malformed)
	w, _ := zw.Create("C.npy")
	w.Write([]byte("\x93NUMPY\x01\x00\x00\x00"))
	zw.Close()

	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"malformed header", malformed.Bytes(), `: member "C.npy": malformed header: does not start with '{'`},
		{"flipped byte", flipped, `: member "C.npy": CRC-32 mismatch (file is corrupted)`},
		{"truncated", b[:len(b)/2], `: not an .npz archive`},
	}
	for _, c := range cases {
		p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".npz")
		if err := os.WriteFile(p, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runCLI("gain", "--stats", p, "--objective", "min-recall", "--out", filepath.Join(dir, "o.npz"))
		if want := "selmix: " + p + c.want + "\n"; code != 2 || !strings.HasPrefix(stderr, "selmix: "+p+": ") || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", c.name, code, stderr, want)
		}
	}
}

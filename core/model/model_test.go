package model

import (
	"archive/zip"
	"bytes"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"selmix/assets"
	"selmix/core/npy"
)

// refForward computes features and logits of one row from Params() in
// float64, independently of gorgonia.
func refForward(t *testing.T, n *Net, x []float32) (feat, logits []float64) {
	t.Helper()
	ps := n.Params()
	get := func(name string) Param {
		for _, p := range ps {
			if p.Name == name {
				return p
			}
		}
		t.Fatalf("no param %q", name)
		return Param{}
	}
	h := make([]float64, len(x))
	for i, v := range x {
		h[i] = float64(v)
	}
	denseRelu := func(h []float64, name string, relu bool) []float64 {
		w, b := get(name+".w"), get(name+".b")
		in, out := w.Shape[0], w.Shape[1]
		o := slices.Clone(b.Data)
		for i := range in {
			for j := range out {
				o[j] += h[i] * w.Data[i*out+j]
			}
		}
		if relu {
			for j := range o {
				o[j] = max(o[j], 0)
			}
		}
		return o
	}
	cfg := n.Config()
	switch cfg.Arch {
	case "mlp":
		for i := range cfg.Hidden {
			h = denseRelu(h, "fc"+string(rune('1'+i)), true)
		}
	case "cnn":
		s := imageSide(cfg.In)
		c := 1
		for l, name := range []string{"conv1", "conv2"} {
			w, b := get(name+".w"), get(name+".b")
			oc := w.Shape[0]
			conv := make([]float64, oc*s*s)
			for o := range oc {
				for r := range s {
					for q := range s {
						v := b.Data[o]
						for ic := range c {
							for dr := -1; dr <= 1; dr++ {
								for dq := -1; dq <= 1; dq++ {
									rr, qq := r+dr, q+dq
									if rr < 0 || rr >= s || qq < 0 || qq >= s {
										continue
									}
									v += h[(ic*s+rr)*s+qq] * w.Data[((o*c+ic)*3+dr+1)*3+dq+1]
								}
							}
						}
						conv[(o*s+r)*s+q] = max(v, 0)
					}
				}
			}
			s2 := s / 2
			pool := make([]float64, oc*s2*s2)
			for o := range oc {
				for r := range s2 {
					for q := range s2 {
						m := math.Inf(-1)
						for dr := range 2 {
							for dq := range 2 {
								m = max(m, conv[(o*s+2*r+dr)*s+2*q+dq])
							}
						}
						pool[(o*s2+r)*s2+q] = m
					}
				}
			}
			h, s, c = pool, s2, oc
			_ = l
		}
		h = denseRelu(h, "fc1", true)
	case "identity":
		if cfg.Adapter > 0 {
			h = denseRelu(h, "fc1", true)
		}
	}
	return h, denseRelu(h, "head", false)
}

func closeTo(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

var archCases = []struct {
	name string
	cfg  Config
}{
	{"mlp", Config{Arch: "mlp", In: 12, Hidden: []int{9, 5}}},
	{"cnn", Config{Arch: "cnn", In: 64}},
	{"identity", Config{Arch: "identity", In: 12}},
	{"identity-adapter", Config{Arch: "identity", In: 12, Adapter: 6}},
}

// Forward pads the last chunk: 7 rows with EvalBatch 3 is 3+3+1 rows, each
// row compared with a float64 per-row reference (tolerance 1e-5 relative,
// float32 arithmetic over ≤ 300-term sums).
func TestForwardMatchesReference(t *testing.T) {
	for _, c := range archCases {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.Classes, cfg.EvalBatch, cfg.Seed = 4, 3, 11
			n := newNet(t, cfg)
			// non-zero biases
			for _, p := range n.params {
				if !p.decay {
					v := p.val.Float32s()
					for i := range v {
						v[i] = 0.05 * float32(i%5-2)
					}
				}
			}
			rng := rand.New(rand.NewPCG(3, 4))
			const rows = 7
			x := randF32(rng, rows*cfg.In, 1)
			d, k := n.Dim(), cfg.Classes
			feat, logits := make([]float32, rows*d), make([]float32, rows*k)
			if err := n.Forward(feat, logits, x, rows); err != nil {
				t.Fatal(err)
			}
			for r := range rows {
				wf, wl := refForward(t, n, x[r*cfg.In:(r+1)*cfg.In])
				for j := range d {
					if !closeTo(float64(feat[r*d+j]), wf[j], 1e-5) {
						t.Fatalf("row %d feature %d: got %v, want %v", r, j, feat[r*d+j], wf[j])
					}
				}
				for j := range k {
					if !closeTo(float64(logits[r*k+j]), wl[j], 1e-5) {
						t.Fatalf("row %d logit %d: got %v, want %v", r, j, logits[r*k+j], wl[j])
					}
				}
			}
			// nil outputs are allowed; results do not depend on chunking.
			l2 := make([]float32, k)
			if err := n.Forward(nil, l2, x[6*cfg.In:], 1); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(l2, logits[6*k:]) {
				t.Errorf("single-row logits %v differ from batched %v", l2, logits[6*k:])
			}
		})
	}
}

// The training losses equal mixup/CE computed by hand from Forward's
// features (float64 nets; tolerance 1e-6 because Forward hands features out
// as float32, which rounds them at relative 6e-8).
func TestLossMatchesForward(t *testing.T) {
	for _, c := range archCases {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.Classes, cfg.Batch, cfg.Dtype, cfg.Seed = 3, 4, "float64", 5
			n := newNet(t, cfg)
			rng := rand.New(rand.NewPCG(8, 9))
			b, in, d, k := cfg.Batch, cfg.In, n.Dim(), cfg.Classes
			x1, x2 := randF32(rng, b*in, 1), randF32(rng, b*in, 1)
			beta := []float32{0.25, 1, 0.5, 0.75}
			y := []int{0, 2, 1, 2}
			adj := []float32{0.5, -2, 1}
			f1, f2 := make([]float32, b*d), make([]float32, b*d)
			if err := n.Forward(f1, nil, x1, b); err != nil {
				t.Fatal(err)
			}
			if err := n.Forward(f2, nil, x2, b); err != nil {
				t.Fatal(err)
			}
			W, bias := n.Head()
			ce := func(f []float64, a []float32, y int) float64 {
				z := slices.Clone(bias)
				for i := range d {
					for j := range k {
						z[j] += f[i] * W[i*k+j]
					}
				}
				for j := range k {
					if a != nil {
						z[j] += float64(a[j])
					}
				}
				m := slices.Max(z)
				var s float64
				for j := range k {
					s += math.Exp(z[j] - m)
				}
				return m + math.Log(s) - z[y]
			}
			var wantMix, wantCE float64
			for i := range b {
				f := make([]float64, d)
				fc := make([]float64, d)
				for j := range d {
					bi := float64(beta[i])
					f[j] = bi*float64(f1[i*d+j]) + (1-bi)*float64(f2[i*d+j])
					fc[j] = float64(f1[i*d+j])
				}
				wantMix += ce(f, nil, y[i]) / float64(b)
				wantCE += ce(fc, adj, y[i]) / float64(b)
			}
			gotMix, _, err := n.lossGrad(true, x1, x2, beta, y, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			gotCE, _, err := n.lossGrad(false, x1, nil, nil, y, adj, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !closeTo(gotMix, wantMix, 1e-6) {
				t.Errorf("mix loss: got %.15g, want %.15g", gotMix, wantMix)
			}
			if !closeTo(gotCE, wantCE, 1e-6) {
				t.Errorf("CE loss: got %.15g, want %.15g", gotCE, wantCE)
			}
		})
	}
}

// Two SGD steps equal the update computed by hand from the gradients:
// v ← μv + g + λw (λ only on weights), w ← w − ηv (η_head on head.*,
// η_backbone elsewhere).
func TestSGDStepByHand(t *testing.T) {
	cfg := Config{Arch: "identity", In: 5, Adapter: 4, Classes: 3, Batch: 4, Dtype: "float64", Seed: 2}
	n := newNet(t, cfg)
	rng := rand.New(rand.NewPCG(5, 6))
	x := randF32(rng, 4*5, 1)
	y := []int{0, 1, 2, 1}
	adj := []float32{0.1, 0.2, -0.3}
	o := StepOpts{LRHead: 0.5, LRBackbone: 0.05, WeightDecay: 0.25, Momentum: 0.9}
	w := [][]float64{}
	for _, p := range n.Params() {
		w = append(w, p.Data)
	}
	v := make([][]float64, len(w))
	for i := range w {
		v[i] = make([]float64, len(w[i]))
	}
	for step := range 2 {
		_, g, err := n.lossGrad(false, x, nil, nil, y, adj, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range n.Params() {
			lr, wd := float64(o.LRBackbone), float64(o.WeightDecay)
			if strings.HasPrefix(p.Name, "head.") {
				lr = float64(o.LRHead)
			}
			if strings.HasSuffix(p.Name, ".b") {
				wd = 0
			}
			for j := range w[i] {
				v[i][j] = float64(o.Momentum)*v[i][j] + g[i][j] + wd*w[i][j]
				w[i][j] -= lr * v[i][j]
			}
		}
		if _, err := n.CEStep(x, y, adj, o); err != nil {
			t.Fatal(err)
		}
		for i, p := range n.Params() {
			for j := range w[i] {
				if !closeTo(p.Data[j], w[i][j], 1e-14) {
					t.Fatalf("step %d %s[%d]: got %.17g, want %.17g", step, p.Name, j, p.Data[j], w[i][j])
				}
			}
			mom := toF64(n.params[i].mom)
			for j := range v[i] {
				if !closeTo(mom[j], v[i][j], 1e-14) {
					t.Fatalf("step %d momentum %s[%d]: got %.17g, want %.17g", step, p.Name, j, mom[j], v[i][j])
				}
			}
		}
	}
	// Biases must have moved (their gradient is non-zero) without decay,
	// which the comparison above already pins down; check they moved at all.
	if slices.Equal(n.Params()[1].Data, make([]float64, 4)) {
		t.Error("adapter bias did not move")
	}
}

type stepData struct {
	x1, x2, beta []float32
	y            []int
}

func makeSteps(seed uint64, steps, b, in, k int) []stepData {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]stepData, steps)
	for s := range out {
		beta := make([]float32, b)
		for i := range beta {
			beta[i] = 0.5 + 0.5*rng.Float32()
		}
		out[s] = stepData{randF32(rng, b*in, 1), randF32(rng, b*in, 1), beta, randLabels(rng, b, k)}
	}
	return out
}

var defaultOpts = StepOpts{LRHead: 0.05, LRBackbone: 0.005, WeightDecay: 5e-4, Momentum: 0.9}

// trainSteps alternates MixStep (even step numbers) and CEStep, numbering
// steps from first.
func trainSteps(t *testing.T, n *Net, first int, steps []stepData) []float64 {
	t.Helper()
	var losses []float64
	for j, s := range steps {
		i := first + j
		var l float64
		var err error
		if i%2 == 0 {
			l, err = n.MixStep(s.x1, s.x2, s.beta, s.y, defaultOpts)
		} else {
			l, err = n.CEStep(s.x1, s.y, []float32{0.1, -0.1, 0}, defaultOpts)
		}
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, l)
	}
	return losses
}

func TestDeterminism(t *testing.T) {
	for _, c := range archCases {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.Classes, cfg.Batch = 3, 8
			steps := makeSteps(1, 20, cfg.Batch, cfg.In, 3)
			run := func(seed uint64) (*Net, []float64) {
				cfg.Seed = seed
				n := newNet(t, cfg)
				return n, trainSteps(t, n, 0, steps)
			}
			a, la := run(1)
			b, lb := run(1)
			c2, lc := run(2)
			if !slices.Equal(la, lb) {
				t.Errorf("same seed, different losses:\n%v\n%v", la, lb)
			}
			pa, pb, pc := a.Params(), b.Params(), c2.Params()
			for i := range pa {
				if !slices.Equal(pa[i].Data, pb[i].Data) {
					t.Errorf("same seed, different %s", pa[i].Name)
				}
			}
			if slices.Equal(la, lc) {
				t.Error("different seeds gave identical losses")
			}
			if slices.Equal(pa[0].Data, pc[0].Data) {
				t.Errorf("different seeds gave identical %s", pa[0].Name)
			}
		})
	}
}

// blobs returns a separable K-class problem: class means 3 apart per axis
// plus unit noise.
func blobs(rng *rand.Rand, rows, in, k int) ([]float32, []int) {
	x := make([]float32, rows*in)
	y := make([]int, rows)
	for r := range rows {
		c := rng.IntN(k)
		y[r] = c
		for j := range in {
			mu := 0.0
			if j%k == c {
				mu = 3
			}
			x[r*in+j] = float32(mu + rng.NormFloat64())
		}
	}
	return x, y
}

func accuracy(t *testing.T, n *Net, x []float32, y []int) float64 {
	k := n.Config().Classes
	logits := make([]float32, len(y)*k)
	if err := n.Forward(nil, logits, x, len(y)); err != nil {
		t.Fatal(err)
	}
	var ok int
	for i, c := range y {
		row := logits[i*k : (i+1)*k]
		if slices.Index(row, slices.Max(row)) == c {
			ok++
		}
	}
	return float64(ok) / float64(len(y))
}

func TestLearnsSeparableProblem(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		mix  bool
		lr   float32
	}{
		{"mlp/ce", Config{Arch: "mlp", In: 12, Hidden: []int{32, 16}}, false, 0.05},
		{"mlp/mix", Config{Arch: "mlp", In: 12, Hidden: []int{32, 16}}, true, 0.05},
		{"identity-adapter/mix", Config{Arch: "identity", In: 12, Adapter: 16}, true, 0.05},
		{"cnn/ce", Config{Arch: "cnn", In: 64}, false, 0.005},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.Classes, cfg.Batch, cfg.Seed, cfg.EvalBatch = 3, 16, 3, 100
			n := newNet(t, cfg)
			rng := rand.New(rand.NewPCG(21, 22))
			xt, yt := blobs(rng, 300, cfg.In, 3)
			o := StepOpts{LRHead: c.lr, LRBackbone: c.lr, WeightDecay: 5e-4, Momentum: 0.9}
			var first, last float64
			const steps = 300
			for s := range steps {
				x1, y1 := blobs(rng, cfg.Batch, cfg.In, 3)
				var l float64
				var err error
				if c.mix {
					// x2 of the same class as x1, so mixing keeps the label.
					x2 := make([]float32, len(x1))
					for i, yc := range y1 {
						for j := range cfg.In {
							mu := 0.0
							if j%3 == yc {
								mu = 3
							}
							x2[i*cfg.In+j] = float32(mu + rng.NormFloat64())
						}
					}
					beta := make([]float32, cfg.Batch)
					for i := range beta {
						beta[i] = rng.Float32()
					}
					l, err = n.MixStep(x1, x2, beta, y1, o)
				} else {
					l, err = n.CEStep(x1, y1, nil, o)
				}
				if err != nil {
					t.Fatal(err)
				}
				if s < 10 {
					first += l / 10
				}
				if s >= steps-10 {
					last += l / 10
				}
			}
			if last > first/10 {
				t.Errorf("loss fell only from %.4f to %.4f (want ×10)", first, last)
			}
			if acc := accuracy(t, n, xt, yt); acc < 0.95 {
				t.Errorf("held-out accuracy %.3f, want > 0.95", acc)
			}
		})
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	for _, c := range archCases {
		for _, dt := range []string{"float32", "float64"} {
			t.Run(c.name+"/"+dt, func(t *testing.T) {
				cfg := c.cfg
				cfg.Classes, cfg.Batch, cfg.Seed, cfg.Dtype = 3, 8, 9, dt
				steps := makeSteps(4, 10, cfg.Batch, cfg.In, 3)
				ref := newNet(t, cfg)
				want := trainSteps(t, ref, 0, steps)

				n := newNet(t, cfg)
				got := trainSteps(t, n, 0, steps[:5])
				var buf bytes.Buffer
				if err := n.Save(&buf); err != nil {
					t.Fatal(err)
				}
				m, err := Load(bytes.NewReader(buf.Bytes()))
				if err != nil {
					t.Fatal(err)
				}
				if mc, nc := m.Config(), n.Config(); !slices.Equal(mc.Hidden, nc.Hidden) || mc.Arch != nc.Arch ||
					mc.In != nc.In || mc.Adapter != nc.Adapter || mc.Classes != nc.Classes || mc.Batch != nc.Batch ||
					mc.EvalBatch != nc.EvalBatch || mc.Seed != nc.Seed || mc.Dtype != nc.Dtype {
					t.Fatalf("config: got %+v, want %+v", mc, nc)
				}
				for i, p := range n.params {
					q := m.params[i]
					if !bytes.Equal(rawBytes(t, p.val), rawBytes(t, q.val)) || !bytes.Equal(rawBytes(t, p.mom), rawBytes(t, q.mom)) {
						t.Fatalf("%s: weights or momentum not bit-identical after Load", p.name)
					}
				}
				got = append(got, trainSteps(t, m, 5, steps[5:])...)
				if !slices.Equal(got, want) {
					t.Errorf("losses after resume differ:\n got %v\nwant %v", got, want)
				}
			})
		}
	}
}

// rewrite copies the archive in b, dropping entry drop and replacing entry
// repl (if non-empty) with data.
func rewrite(t *testing.T, b []byte, drop, repl string, data []byte) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	for _, f := range zr.File {
		if f.Name == drop {
			continue
		}
		w, err := zw.Create(f.Name)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name == repl {
			w.Write(data)
			continue
		}
		rc, _ := f.Open()
		io.Copy(w, rc)
		rc.Close()
	}
	zw.Close()
	return out.Bytes()
}

// rawBytes is t's data as little-endian bytes.
func rawBytes(t *testing.T, d *tensor.Dense) []byte {
	t.Helper()
	return encoded(t, []int{d.Shape().TotalSize()}, d.Data())
}

// encoded is one .npy stream.
func encoded(t *testing.T, shape []int, data any) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := npy.Encode(&buf, shape, data); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The embedded checkpoint loads, and saves back to the same bytes: the
// on-disk layout has not changed (make assets checks its SHA-256).
func TestSaveBytesUnchanged(t *testing.T) {
	want, err := assets.DefaultCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	n, err := Load(bytes.NewReader(want))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := n.Save(&buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("Save wrote %d bytes that differ from the %d of assets/default/model.npz", buf.Len(), len(want))
	}
}

// newNet is New(cfg), which must succeed.
func newNet(tb testing.TB, cfg Config) *Net {
	tb.Helper()
	n, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// saved is n's checkpoint as Save writes it.
func saved(tb testing.TB, n *Net) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := n.Save(&buf); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// twins is a new net of cfg and its copy through Save and Load.
func twins(t *testing.T, cfg Config) (*Net, *Net) {
	t.Helper()
	a := newNet(t, cfg)
	b, err := Load(bytes.NewReader(saved(t, a)))
	if err != nil {
		t.Fatal(err)
	}
	return a, b
}

func TestLoadErrors(t *testing.T) {
	n := newNet(t, Config{In: 6, Hidden: []int{4}, Classes: 3})
	good := saved(t, n)
	var wrong bytes.Buffer
	wz := npy.NewNPZWriter(&wrong)
	wz.Add("x", []int{5, 4}, make([]float32, 20))
	wz.Close()
	wrongShape := rewrite(t, wrong.Bytes(), "", "", nil)
	zr, _ := zip.NewReader(bytes.NewReader(wrongShape), int64(len(wrongShape)))
	rc, _ := zr.File[0].Open()
	wrongNpy, _ := io.ReadAll(rc)

	cases := []struct {
		name string
		data []byte
		want []string
	}{
		{"not zip", []byte("hello"), []string{"not an .npz"}},
		{"missing config", rewrite(t, good, "config.json.npy", "", nil), []string{`"config.json"`}},
		{"missing weight", rewrite(t, good, "param/fc1.w.npy", "", nil), []string{`"param/fc1.w"`, "float32 (6, 4)"}},
		{"missing momentum", rewrite(t, good, "momentum/head.b.npy", "", nil), []string{`"momentum/head.b"`, "float32 (3,)"}},
		{"wrong shape", rewrite(t, good, "", "param/fc1.w.npy", wrongNpy), []string{`"param/fc1.w.npy"`, "<f4 (5, 4), want float32 (6, 4)"}},
		// The malformed header of the issue used to panic inside npyio.
		{"malformed header", rewrite(t, good, "", "param/fc1.w.npy", []byte("\x93NUMPY\x01\x00\x00\x00")), []string{`model checkpoint: member "param/fc1.w.npy": malformed header`}},
		{"malformed config", rewrite(t, good, "", "config.json.npy", []byte("\x93NUMPY\x01\x00\x00\x00")), []string{`model checkpoint: member "config.json.npy": malformed header`}},
		{"config not JSON", rewrite(t, good, "", "config.json.npy", encoded(t, []int{2}, []uint8("{x"))), []string{`member "config.json.npy": not a valid config`}},
		{"config not uint8", rewrite(t, good, "", "config.json.npy", encoded(t, []int{2}, []float32{1, 2})), []string{`member "config.json.npy": dtype <f4, want uint8`}},
		{"float64 weights in a float32 model", rewrite(t, good, "", "param/fc1.w.npy", encoded(t, []int{6, 4}, make([]float64, 24))), []string{`"param/fc1.w.npy": array is <f8 (6, 4), want float32 (6, 4)`}},
		{"flipped byte", func() []byte {
			b := slices.Clone(good)
			b[len(b)/2] ^= 1
			return b
		}(), []string{"model checkpoint: member", "(file is corrupted)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(bytes.NewReader(c.data))
			if err == nil {
				t.Fatal("Load succeeded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestConfigDefaultsAndErrors(t *testing.T) {
	n := newNet(t, Config{In: 784, Classes: 10})
	c := n.Config()
	if c.Arch != "mlp" || !slices.Equal(c.Hidden, []int{256, 128}) || c.Batch != 128 || c.EvalBatch != 500 || c.Dtype != "float32" || n.Dim() != 128 {
		t.Errorf("defaults: got %+v, d=%d", c, n.Dim())
	}
	dims := []struct {
		cfg  Config
		want int
	}{
		{Config{Arch: "cnn", In: 784, Classes: 10}, 128},
		{Config{Arch: "identity", In: 64, Classes: 10}, 64},
		{Config{Arch: "identity", In: 64, Adapter: 32, Classes: 10}, 32},
		{Config{Arch: "mlp", In: 64, Hidden: []int{256}, Classes: 10}, 256},
	}
	for _, d := range dims {
		n := newNet(t, d.cfg)
		if n.Dim() != d.want {
			t.Errorf("%+v: Dim %d, want %d", d.cfg, n.Dim(), d.want)
		}
	}
	bad := []struct {
		cfg  Config
		want string
	}{
		{Config{In: 0, Classes: 3}, "In"},
		{Config{In: 4, Classes: 1}, "Classes"},
		{Config{Arch: "rnn", In: 4, Classes: 3}, "Arch"},
		{Config{Arch: "cnn", In: 100, Classes: 3}, "square"},
		{Config{In: 4, Classes: 3, Hidden: []int{0}}, "hidden"},
		{Config{Arch: "identity", In: 4, Classes: 3, Adapter: -1}, "Adapter"},
		{Config{In: 4, Classes: 3, Dtype: "int8"}, "Dtype"},
	}
	for _, b := range bad {
		if _, err := New(b.cfg); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%+v: error %v, want mention of %q", b.cfg, err, b.want)
		}
	}
}

func TestHeadAndSetBatch(t *testing.T) {
	n := newNet(t, Config{Arch: "identity", In: 3, Classes: 2, Batch: 4})
	W := []float64{1, -1, 0.5, 0.25, 0, 2}
	b := []float64{0.125, -0.5}
	if err := n.SetHead(W, b); err != nil {
		t.Fatal(err)
	}
	gw, gb := n.Head()
	if !slices.Equal(gw, W) || !slices.Equal(gb, b) {
		t.Fatalf("Head: got %v %v, want %v %v", gw, gb, W, b)
	}
	logits := make([]float32, 2)
	if err := n.Forward(nil, logits, []float32{1, 2, 3}, 1); err != nil {
		t.Fatal(err)
	}
	// [1 2 3]·W + b = [1+1+0, -1+0.5+6] + b
	if want := []float32{2.125, 5}; !slices.Equal(logits, want) {
		t.Errorf("logits %v, want %v", logits, want)
	}
	if err := n.SetHead(W[:5], b); err == nil || !strings.Contains(err.Error(), "3×2") {
		t.Errorf("short head: error %v", err)
	}
	if err := n.SetHead(W, []float64{math.NaN(), 0}); err == nil {
		t.Error("NaN head accepted")
	}

	// SetBatch keeps weights and the new graph trains at the new size.
	if _, err := n.CEStep(make([]float32, 12), []int{0, 1, 0, 1}, nil, defaultOpts); err != nil {
		t.Fatal(err)
	}
	before := n.Params()
	if err := n.SetBatch(2); err != nil {
		t.Fatal(err)
	}
	for i, p := range n.Params() {
		if !slices.Equal(p.Data, before[i].Data) {
			t.Errorf("SetBatch changed %s", p.Name)
		}
	}
	if _, err := n.MixStep(make([]float32, 6), make([]float32, 6), []float32{1, 0.5}, []int{1, 0}, defaultOpts); err != nil {
		t.Fatal(err)
	}
	if n.Config().Batch != 2 {
		t.Errorf("Batch %d after SetBatch(2)", n.Config().Batch)
	}
	if err := n.SetBatch(0); err == nil {
		t.Error("SetBatch(0) accepted")
	}
}

func TestStepErrorsAndPanics(t *testing.T) {
	n := newNet(t, Config{Arch: "identity", In: 2, Classes: 2, Batch: 2})
	before := n.Params()
	if _, err := n.CEStep([]float32{1, 2, 3, 4}, []int{0, 2}, nil, defaultOpts); err == nil || !strings.Contains(err.Error(), "label 2 at row 1") {
		t.Errorf("bad label: error %v", err)
	}
	nan := float32(math.NaN())
	if _, err := n.CEStep([]float32{nan, 2, 3, 4}, []int{0, 1}, nil, defaultOpts); err == nil || !strings.Contains(err.Error(), "NaN") {
		t.Errorf("NaN input: error %v", err)
	}
	for i, p := range n.Params() {
		if !slices.Equal(p.Data, before[i].Data) {
			t.Errorf("failed step changed %s", p.Name)
		}
	}
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: no panic", name)
			}
		}()
		f()
	}
	mustPanic("MixStep short y", func() { n.MixStep(make([]float32, 4), make([]float32, 4), []float32{1, 1}, []int{0}, defaultOpts) })
	mustPanic("CEStep short x", func() { n.CEStep(make([]float32, 3), []int{0, 1}, nil, defaultOpts) })
	mustPanic("Forward short logits", func() { n.Forward(nil, make([]float32, 1), make([]float32, 2), 1) })
}

// A forged configuration describing a huge network is refused before the
// network is allocated: its arrays are not in the checkpoint.
func TestLoadForgedConfigAllocatesLittle(t *testing.T) {
	for _, cfg := range []string{
		`{"Arch":"mlp","In":1000000000,"Hidden":[1000000000],"Classes":1000000000}`,
		`{"Arch":"identity","In":1000000000,"Classes":1000000000,"Dtype":"float64"}`,
		`{"Arch":"mlp","In":2,"Hidden":[` + strings.Repeat("1,", 100000) + `1],"Classes":2}`,
	} {
		var buf bytes.Buffer
		zw := npy.NewNPZWriter(&buf)
		zw.Add("config.json", []int{len(cfg)}, []uint8(cfg))
		zw.Close()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Load(bytes.NewReader(buf.Bytes()))
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Fatalf("%.60s…: loaded", cfg)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 10<<20 {
			t.Errorf("%.60s…: allocated %d bytes before refusing (%v)", cfg, alloc, err)
		}
	}
}

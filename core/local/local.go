package local

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"

	"gonum.org/v1/gonum/mat"

	"selmix/core/blas"
	"selmix/core/data"
	"selmix/core/model"
	"selmix/core/train"
)

// Format names the State of a Local trainer's checkpoint: a little-
// endian uint32 length, a JSON header (sampler RNG, pseudo-labels), then the
// model checkpoint (model.Save).
const Format = "selmix-local/1"

// Local is the in-process Trainer: a gorgonia model (model.Net) and a data
// split in memory.
type Local struct {
	net *model.Net
	sp  *data.Split

	src        *rand.PCG
	rng        *rand.Rand
	labeledIdx [][]int   // labeled indices per class
	pseudo     []int     // labels of the unlabeled set x2 is drawn by; nil before Pseudo
	partnerSet *data.Set // where x2 comes from
	partnerIdx [][]int   // its indices per (pseudo-)class

	pOf        []float64 // the P that cum was built from
	cum        []float64 // cumulative P over K² pairs
	tOf, aOf   []float64 // the targets and adjustment tgt, adj were made from
	tgt, adj   []float32
	x1, x2     []float32
	beta       []float32
	y          []int
	xx         []float32 // ModeResample's 2B rows: x1 then x2
	yy         []int     // and their labels: y1 then y2
	pairs      []int     // the pairs i·K+j of the last draw
	feat, logs []float32
	cpu        cpuClock
}

// samplerStream is the PCG stream of the sampler: the engine used it before
// the Trainer existed, and keeping it keeps recorded runs reproducible.
const samplerStream = 0x5e1a1c

// New checks that net and sp fit together and returns a Trainer over
// them whose sampler is seeded with seed.
func New(net *model.Net, sp *data.Split, seed uint64) (*Local, error) {
	mc := net.Config()
	if sp.K != mc.Classes {
		return nil, fmt.Errorf("model has %d classes, data has %d", mc.Classes, sp.K)
	}
	for _, s := range []struct {
		name string
		set  *data.Set
	}{{"labeled", &sp.Labeled}, {"validation", &sp.Val}, {"test", &sp.Test}} {
		if s.set.N == 0 {
			return nil, fmt.Errorf("%s set is empty", s.name)
		}
		if s.set.Dim != mc.In {
			return nil, fmt.Errorf("%s set has %d inputs per sample, model expects %d", s.name, s.set.Dim, mc.In)
		}
	}
	if sp.Unlabeled.N > 0 && sp.Unlabeled.Dim != mc.In {
		return nil, fmt.Errorf("unlabeled set has %d inputs per sample, model expects %d", sp.Unlabeled.Dim, mc.In)
	}
	l := &Local{net: net, sp: sp, src: rand.NewPCG(seed, samplerStream)}
	l.rng = rand.New(l.src)
	l.labeledIdx = sp.Labeled.ClassIndex(sp.K)
	for k, idx := range l.labeledIdx {
		if len(idx) == 0 {
			return nil, fmt.Errorf("labeled set has no sample of class %d (%s)", k, className(sp.ClassNames, k))
		}
	}
	l.partnerSet, l.partnerIdx = &sp.Labeled, l.labeledIdx
	return l, nil
}

func className(names []string, k int) string {
	if k < len(names) && names[k] != "" {
		return names[k]
	}
	return fmt.Sprint(k)
}

// localHeader is the JSON part of a Local checkpoint.
type localHeader struct {
	RNG    []byte `json:"rng"`
	Pseudo []int  `json:"pseudo,omitempty"`
}

// Load restores a Local trainer on sp from its Saved state.
func Load(sp *data.Split, s *train.Saved) (*Local, error) {
	if s.Format != Format {
		return nil, fmt.Errorf("checkpoint holds a %q trainer state; the in-process trainer reads %q", s.Format, Format)
	}
	b := s.State
	if len(b) < 4 {
		return nil, errors.New("local trainer state: truncated header")
	}
	n := int(binary.LittleEndian.Uint32(b))
	if n > len(b)-4 {
		return nil, fmt.Errorf("local trainer state: header of %d bytes past the end (%d)", n, len(b)-4)
	}
	var h localHeader
	if err := json.Unmarshal(b[4:4+n], &h); err != nil {
		return nil, fmt.Errorf("local trainer state: %v", err)
	}
	net, err := model.Load(bytes.NewReader(b[4+n:]))
	if err != nil {
		return nil, fmt.Errorf("local trainer state: %w", err)
	}
	l, err := New(net, sp, 0)
	if err != nil {
		return nil, err
	}
	if err := l.src.UnmarshalBinary(h.RNG); err != nil {
		return nil, fmt.Errorf("local trainer state: sampler: %v", err)
	}
	if h.Pseudo != nil {
		if len(h.Pseudo) != sp.Unlabeled.N {
			return nil, fmt.Errorf("local trainer state: %d pseudo-labels for an unlabeled set of %d", len(h.Pseudo), sp.Unlabeled.N)
		}
		l.setPseudo(h.Pseudo)
	}
	return l, nil
}

// Net is the model. Only touch it when no Train or Evaluate is running.
func (l *Local) Net() *model.Net { return l.net }

// Split is the data.
func (l *Local) Split() *data.Split { return l.sp }

func (l *Local) Info() train.Info {
	sp := l.sp
	return train.Info{
		K: sp.K, D: l.net.Dim(),
		ClassNames:  sp.ClassNames,
		TrainCounts: sp.Labeled.Counts(sp.K),
		Labeled:     sp.Labeled.N, Unlabeled: sp.Unlabeled.N, Val: sp.Val.N, Test: sp.Test.N,
		Device: "cpu (gorgonia, " + blas.Name + ")",
	}
}

func (l *Local) Close() error { return nil }

// evalChunk is how many rows go through the model at a time: it bounds the
// logits buffer (K = 1000: 16 MB) whatever the size of the split.
const evalChunk = 4096

// Evaluate runs split through the model: the joint confusion matrix and,
// with centroids, the per-class feature centroids (by true label) and the
// head.
func (l *Local) Evaluate(split train.Split, centroids bool) (*train.Eval, error) {
	set := &l.sp.Val
	if split == train.SplitTest {
		set = &l.sp.Test
	}
	K, d, in, n := l.sp.K, l.net.Dim(), set.Dim, set.N
	acc := NewConfusion(K, d, centroids)
	// A head on its inputs has the inputs as features: no copy.
	direct := l.net.FeaturesAreInputs()
	rows := min(n, evalChunk)
	if cap(l.logs) < rows*K {
		l.logs = make([]float32, rows*K)
	}
	if centroids && !direct && cap(l.feat) < rows*d {
		l.feat = make([]float32, rows*d)
	}
	for lo := 0; lo < n; lo += evalChunk {
		hi := min(lo+evalChunk, n)
		x := set.X[lo*in : hi*in]
		logits := l.logs[:(hi-lo)*K]
		var feat []float32
		if centroids {
			if direct {
				feat = x
			} else {
				feat = l.feat[:(hi-lo)*d]
			}
		}
		out := feat
		if direct {
			out = nil
		}
		if err := l.net.Forward(out, logits, x, hi-lo); err != nil {
			return nil, err
		}
		acc.Add(set.Y[lo:hi], logits, feat)
	}
	ev := &train.Eval{Rows: n, Sys: l.system()}
	ev.C, ev.Z = acc.Result()
	if centroids {
		W, b := l.net.Head()
		ev.W, ev.B = mat.NewDense(d, K, W), b
	}
	return ev, nil
}

// Confusion accumulates a split's statistics chunk by chunk: the joint
// confusion matrix of the labels against the argmax of the logits (the
// lowest index on ties) and, optionally, the per-class feature sums.
type Confusion struct {
	K, d   int
	counts []float64 // K×K
	n      []float64 // samples per class
	zsum   []float64 // K×d, nil without centroids
}

// NewConfusion returns an empty accumulator.
func NewConfusion(K, d int, centroids bool) *Confusion {
	c := &Confusion{K: K, d: d, counts: make([]float64, K*K), n: make([]float64, K)}
	if centroids {
		c.zsum = make([]float64, K*d)
	}
	return c
}

// Add counts rows with labels y, logits (rows×K) and, if the accumulator
// keeps centroids, their features (rows×d).
func (c *Confusion) Add(y []int, logits, feat []float32) {
	K, d := c.K, c.d
	for i, t := range y {
		c.counts[t*K+argmax(logits[i*K:(i+1)*K])]++
		c.n[t]++
		if c.zsum != nil {
			row := c.zsum[t*d : (t+1)*d]
			for j, v := range feat[i*d : (i+1)*d] {
				row[j] += float64(v)
			}
		}
	}
}

// Result is C (sums to 1) and the centroids Z (nil without centroids; a
// class without samples keeps a zero row, which metric.Check reports by
// name).
func (c *Confusion) Result() (C, Z *mat.Dense) {
	var total float64
	for _, v := range c.n {
		total += v
	}
	C = mat.NewDense(c.K, c.K, append([]float64(nil), c.counts...))
	C.Scale(1/total, C)
	if c.zsum != nil {
		Z = mat.NewDense(c.K, c.d, append([]float64(nil), c.zsum...))
		for k := range c.K {
			if c.n[k] > 0 {
				r := Z.RawRowView(k)
				for j := range r {
					r[j] /= c.n[k]
				}
			}
		}
	}
	return C, Z
}

func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// Pseudo relabels the unlabeled set by the model's predictions (or its true
// labels with oracle), which decide where x2 is drawn from.
func (l *Local) Pseudo(oracle bool) error {
	u := &l.sp.Unlabeled
	if u.N == 0 {
		return nil
	}
	if oracle {
		l.setPseudo(append([]int(nil), u.Y...))
		return nil
	}
	K, in := l.sp.K, u.Dim
	if cap(l.logs) < min(u.N, evalChunk)*K {
		l.logs = make([]float32, min(u.N, evalChunk)*K)
	}
	pred := make([]int, u.N)
	for lo := 0; lo < u.N; lo += evalChunk {
		hi := min(lo+evalChunk, u.N)
		logits := l.logs[:(hi-lo)*K]
		if err := l.net.Forward(nil, logits, u.X[lo*in:hi*in], hi-lo); err != nil {
			return err
		}
		for i := range hi - lo {
			pred[lo+i] = argmax(logits[i*K : (i+1)*K])
		}
	}
	l.setPseudo(pred)
	return nil
}

func (l *Local) setPseudo(labels []int) {
	idx := make([][]int, l.sp.K)
	for i, y := range labels {
		if y >= 0 && y < l.sp.K {
			idx[y] = append(idx[y], i)
		}
	}
	l.pseudo = labels
	l.partnerSet, l.partnerIdx = &l.sp.Unlabeled, idx
}

// Train takes len(r.LR) steps of Alg. 2 (or of the request's other mode).
func (l *Local) Train(r *train.TrainRequest) (float64, error) {
	B := r.Batch
	rows := B
	if r.Mode == train.ModeResample {
		rows = 2 * B // x1 and x2, each a sample of its own
	}
	if err := l.net.SetBatch(rows); err != nil {
		return 0, err
	}
	in := l.sp.Labeled.Dim
	if len(l.y) != B || (rows != B && len(l.yy) != rows) {
		l.x1, l.x2 = make([]float32, B*in), make([]float32, B*in)
		l.beta, l.y = make([]float32, B), make([]int, B)
		l.xx, l.yy = nil, nil
		if rows != B {
			l.xx, l.yy = make([]float32, rows*in), make([]int, rows)
		}
	}
	K := l.sp.K
	if r.Mode.DrawsPairs() {
		if len(r.P) != K*K {
			panic(fmt.Sprintf("train: P has %d entries, want %d", len(r.P), K*K))
		}
		if len(l.pOf) == 0 || &l.pOf[0] != &r.P[0] {
			l.cum = cumulate(l.cum, r.P)
			l.pOf = r.P
		}
	}
	if r.Mode == train.ModeSoft {
		if len(r.Targets) != K*K || (r.Adjust != nil && len(r.Adjust) != K) {
			panic(fmt.Sprintf("train: %d targets and %d adjustments, want %d and nil or %d", len(r.Targets), len(r.Adjust), K*K, K))
		}
		if !sameSlice(l.tOf, r.Targets) {
			l.tgt, l.tOf = toF32(l.tgt, r.Targets), r.Targets
		}
		if r.Adjust == nil {
			l.adj, l.aOf = nil, nil
		} else if !sameSlice(l.aOf, r.Adjust) {
			l.adj, l.aOf = toF32(l.adj, r.Adjust), r.Adjust
		}
	}
	var loss float64
	for _, lr := range r.LR {
		o := model.StepOpts{
			LRHead: float32(lr), LRBackbone: float32(lr / 10),
			WeightDecay: float32(r.WeightDecay), Momentum: float32(r.Momentum),
			FreezeBackbone: r.FreezeBackbone,
		}
		var err error
		switch r.Mode {
		case train.ModeCE:
			loss, err = l.ceStep(o)
		case train.ModeSoft:
			loss, err = l.softStep(r.Sampling, o)
		case train.ModeResample:
			loss, err = l.resampleStep(r.BetaMin, o)
		default:
			loss, err = l.mixStep(r.BetaMin, o)
		}
		if err != nil {
			return 0, err
		}
	}
	return loss, nil
}

func cumulate(dst, p []float64) []float64 {
	if len(dst) != len(p) {
		dst = make([]float64, len(p))
	}
	acc := 0.0
	for i, v := range p {
		acc += v
		dst[i] = acc
	}
	return dst
}

// ceStep is a plain CE step on a uniform labeled batch.
func (l *Local) ceStep(o model.StepOpts) (float64, error) {
	lab, in := &l.sp.Labeled, l.sp.Labeled.Dim
	for i := range l.y {
		j := l.rng.IntN(lab.N)
		copy(l.x1[i*in:(i+1)*in], lab.Row(j))
		l.y[i] = lab.Y[j]
	}
	return l.net.CEStep(l.x1, l.y, nil, o)
}

// sameSlice reports whether a and b are the same slice (not equal values):
// the engine hands the same targets to every request between refreshes.
func sameSlice(a, b []float64) bool {
	return len(a) == len(b) && len(a) > 0 && &a[0] == &b[0]
}

func toF32(dst []float32, v []float64) []float32 {
	dst = dst[:0]
	for _, x := range v {
		dst = append(dst, float32(x))
	}
	return dst
}

// softStep is a soft-target step on a labeled batch drawn by sampling.
func (l *Local) softStep(sampling train.Sampling, o model.StepOpts) (float64, error) {
	lab, in, K := &l.sp.Labeled, l.sp.Labeled.Dim, l.sp.K
	for i := range l.y {
		var j int
		if sampling == train.SampleClass {
			idx := l.labeledIdx[l.rng.IntN(K)]
			j = idx[l.rng.IntN(len(idx))]
		} else {
			j = l.rng.IntN(lab.N)
		}
		copy(l.x1[i*in:(i+1)*in], lab.Row(j))
		l.y[i] = lab.Y[j]
	}
	return l.net.SoftStep(l.x1, l.y, l.tgt, l.adj, o)
}

// mixStep is Alg. 2's inner step: B label pairs from P, a labeled x1 of
// class y1 and a partner x2 of class y2, β ~ U[β_min, 1], one SGD step on
// CE(Wᵀ(β g(x1) + (1−β) g(x2)) + b, y1).
func (l *Local) mixStep(betaMin float64, o model.StepOpts) (float64, error) {
	l.drawMix(betaMin)
	return l.net.MixStep(l.x1, l.x2, l.beta, l.y, o)
}

// resampleStep draws what mixStep draws (β included, unused) and takes one
// SGD step on the mean CE over the 2B samples unmixed: x1 with label y1,
// x2 with label y2.
func (l *Local) resampleStep(betaMin float64, o model.StepOpts) (float64, error) {
	l.drawMix(betaMin)
	B, K := len(l.y), l.sp.K
	copy(l.xx, l.x1)
	copy(l.xx[len(l.x1):], l.x2)
	copy(l.yy, l.y)
	for i := range B {
		l.yy[B+i] = l.pairs[i] % K
	}
	return l.net.CEStep(l.xx, l.yy, nil, o)
}

// drawMix fills x1, x2, β and y with one step's draws of Alg. 2, and
// pairs with the pairs drawn.
func (l *Local) drawMix(betaMin float64) {
	lab, in, K := &l.sp.Labeled, l.sp.Labeled.Dim, l.sp.K
	for i := range l.y {
		pair := l.drawPair()
		y1, y2 := pair/K, pair%K
		idx1 := l.labeledIdx[y1]
		copy(l.x1[i*in:(i+1)*in], lab.Row(idx1[l.rng.IntN(len(idx1))]))
		ps, idx2 := l.partnerSet, l.partnerIdx[y2]
		if len(idx2) == 0 {
			// No unlabeled sample carries pseudo-label y2 yet.
			ps, idx2 = lab, l.labeledIdx[y2]
		}
		copy(l.x2[i*in:(i+1)*in], ps.Row(idx2[l.rng.IntN(len(idx2))]))
		l.beta[i] = float32(betaMin + (1-betaMin)*l.rng.Float64())
		l.y[i] = y1
		l.pairs = append(l.pairs[:i], pair)
	}
}

// drawPair draws a flat pair index i·K+j from the cumulative P: the first
// pair whose cumulative mass exceeds u, so a pair of zero probability is
// never drawn.
func (l *Local) drawPair() int {
	total := l.cum[len(l.cum)-1]
	u := l.rng.Float64() * total
	pair := sort.Search(len(l.cum), func(k int) bool { return l.cum[k] > u })
	if pair == len(l.cum) {
		pair = len(l.cum) - 1
	}
	return pair
}

// Save encodes the sampler, the pseudo-labels and the model.
func (l *Local) Save() (*train.Saved, error) {
	rng, err := l.src.MarshalBinary()
	if err != nil {
		return nil, err
	}
	js, err := json.Marshal(localHeader{RNG: rng, Pseudo: l.pseudo})
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	binary.Write(&buf, binary.LittleEndian, uint32(len(js)))
	buf.Write(js)
	if err := l.net.Save(&buf); err != nil {
		return nil, err
	}
	W, b := l.net.Head()
	return &train.Saved{Format: Format, State: buf.Bytes(), W: W, B: b}, nil
}

// ParseCheckpoint decodes and checks an engine checkpoint, version 1, 2 or 3:
// a version 1 file's model and sampler become a Local trainer's state.
func ParseCheckpoint(b []byte) (*train.Checkpoint, error) {
	return train.ParseCheckpointWith(b, v1State)
}

// v1State is the Local state and head of a version 1 checkpoint's model
// and sampler.
func v1State(modelBytes, rng []byte) (*train.Saved, error) {
	net, err := model.Load(bytes.NewReader(modelBytes))
	if err != nil {
		return nil, err
	}
	state, err := localState(modelBytes, rng)
	if err != nil {
		return nil, err
	}
	W, b := net.Head()
	return &train.Saved{Format: Format, State: state, W: W, B: b}, nil
}

// localState builds a Format state from a model checkpoint and a
// sampler state (reading version 1 engine checkpoints).
func localState(modelBytes, rng []byte) ([]byte, error) {
	js, err := json.Marshal(localHeader{RNG: rng})
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	binary.Write(&buf, binary.LittleEndian, uint32(len(js)))
	buf.Write(js)
	buf.Write(modelBytes)
	return buf.Bytes(), nil
}

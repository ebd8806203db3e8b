package model

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gorgonia.org/tensor"
)

// A linear head on its inputs (arch identity without an adapter, the shape
// of every run on imported features) is one matrix product each way: its
// steps and evaluations run as BLAS calls on the weight tensors instead of
// through gorgonia graphs, whose per-op overhead is several times the
// arithmetic at small sizes. The results agree with the graphs to float32
// rounding (TestFastHeadMatchesGraph).

// useFastHead is switched off by tests to compare against the graphs.
var useFastHead = true

// FeaturesAreInputs reports whether the features g(x) are the inputs
// themselves (a head on imported features, no adapter).
func (n *Net) FeaturesAreInputs() bool { return n.cfg.Arch == "identity" && n.cfg.Adapter == 0 }

func (n *Net) fastHead() bool {
	return useFastHead && n.cfg.Arch == "identity" && n.cfg.Adapter == 0 && n.dt == tensor.Float32
}

// headBufs are a fast head's scratch buffers, reused across steps.
type headBufs struct {
	f, z, dz, dw, db []float32
}

func grow(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}

func general(rows, cols int, data []float32) blas32.General {
	return blas32.General{Rows: rows, Cols: cols, Stride: cols, Data: data}
}

// headMix is MixStep for a fast head: f = β x1 + (1−β) x2 row by row.
func (n *Net) headMix(x1, x2, beta []float32, y []int, o StepOpts) (float64, error) {
	B, d := n.cfg.Batch, n.d
	if len(y) != B || len(beta) != B || len(x1) != B*d || len(x2) != B*d {
		panic(fmt.Sprintf("model: MixStep wants %d labels, %d betas and 2×%d×%d inputs, got %d, %d, %d and %d",
			B, B, B, d, len(y), len(beta), len(x1), len(x2)))
	}
	hb := &n.head
	hb.f = grow(hb.f, B*d)
	for i, bt := range beta {
		c := 1 - bt
		r1, r2, out := x1[i*d:(i+1)*d], x2[i*d:(i+1)*d], hb.f[i*d:(i+1)*d]
		for j := range out {
			out[j] = bt*r1[j] + c*r2[j]
		}
	}
	return n.headStep(hb.f, y, nil, nil, o)
}

// headCE is CEStep for a fast head.
func (n *Net) headCE(x []float32, y []int, adj []float32, o StepOpts) (float64, error) {
	B, d, k := n.cfg.Batch, n.d, n.cfg.Classes
	if len(y) != B || len(x) != B*d || (adj != nil && len(adj) != k) {
		panic(fmt.Sprintf("model: CEStep wants %d labels, %d×%d inputs and nil or %d adjustments, got %d, %d and %d",
			B, B, d, k, len(y), len(x), len(adj)))
	}
	return n.headStep(x, y, nil, adj, o)
}

// headStep takes one SGD step of mean CE(f·W + b + adj, y) over the rows of
// f, against the rows y of tgt (K×K, SoftStep's targets) or, if tgt is nil,
// one-hot rows. On a label outside [0, K) or a non-finite loss it returns an
// error and leaves the weights unchanged.
func (n *Net) headStep(f []float32, y []int, tgt, adj []float32, o StepOpts) (float64, error) {
	rows, d, k := len(y), n.d, n.cfg.Classes
	for i, c := range y {
		if c < 0 || c >= k {
			return 0, fmt.Errorf("model: label %d at row %d is outside [0, %d)", c, i, k)
		}
	}
	pw, pb := n.params[0], n.params[1]
	W, b := pw.val.Float32s(), pb.val.Float32s()
	hb := &n.head
	hb.z = grow(hb.z, rows*k)
	blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, general(rows, d, f), general(d, k, W), 0, general(rows, k, hb.z))
	// z ← softmax gradient of the mean CE: (p − onehot(y)) / rows, one exp
	// per logit; the loss accumulates in float64 as the graphs' op does.
	var loss float64
	inv := 1 / float64(rows)
	for i, c := range y {
		zi := hb.z[i*k : (i+1)*k]
		// As the graphs do: the bias is added in float32, the adjustment
		// and everything after in float64.
		m := math.Inf(-1)
		for j := range zi {
			zi[j] += b[j]
			v := float64(zi[j])
			if adj != nil {
				v += float64(adj[j])
			}
			m = max(m, v)
		}
		vc := float64(zi[c])
		if adj != nil {
			vc += float64(adj[c])
		}
		// Soft targets t (row c of tgt): loss Σt·log s − Σ_j t_j·(v_j − m),
		// gradient (p·Σt − t)/rows, as the graphs' op computes them.
		var ti []float32
		if tgt != nil {
			ti = tgt[c*k : (c+1)*k]
		}
		var s, tsum, dot float64
		for j := range zi {
			v := float64(zi[j])
			if adj != nil {
				v += float64(adj[j])
			}
			e := math.Exp(v - m)
			s += e
			zi[j] = float32(e)
			if ti != nil {
				tsum += float64(ti[j])
				dot += float64(ti[j]) * (v - m)
			}
		}
		if ti == nil {
			loss += math.Log(s) - (vc - m)
			r := inv / s
			for j := range zi {
				zi[j] = float32(float64(zi[j]) * r)
			}
			zi[c] -= float32(inv)
			continue
		}
		// Rounded as the one-hot branch rounds, so T = I is CE bit for bit.
		loss += tsum*math.Log(s) - dot
		r := inv * tsum / s
		for j := range zi {
			zi[j] = float32(float64(zi[j])*r) - float32(inv*float64(ti[j]))
		}
	}
	loss *= inv
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return loss, fmt.Errorf("model: loss is %v; weights left unchanged", loss)
	}
	hb.dw, hb.db = grow(hb.dw, d*k), grow(hb.db, k)
	blas32.Gemm(blas.Trans, blas.NoTrans, 1, general(rows, d, f), general(rows, k, hb.z), 0, general(d, k, hb.dw))
	clear(hb.db)
	for i := range rows {
		for j, g := range hb.z[i*k : (i+1)*k] {
			hb.db[j] += g
		}
	}
	sgd(W, pw.mom.Float32s(), hb.dw, o.LRHead, o.WeightDecay, o.Momentum)
	sgd(b, pb.mom.Float32s(), hb.db, o.LRHead, 0, o.Momentum)
	return loss, nil
}

// headForward is Forward for a fast head: the features are the inputs.
func (n *Net) headForward(feat, logits, x []float32, rows int) {
	d, k := n.d, n.cfg.Classes
	if feat != nil {
		copy(feat, x)
	}
	if logits == nil || rows == 0 {
		return
	}
	b := n.params[1].val.Float32s()
	for i := range rows {
		copy(logits[i*k:(i+1)*k], b)
	}
	blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, general(rows, d, x), general(d, k, n.params[0].val.Float32s()), 1, general(rows, k, logits))
}

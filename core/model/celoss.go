package model

import (
	"fmt"
	"hash"
	"hash/fnv"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// softmaxCE is a fused, numerically stable softmax cross-entropy op:
//
//	loss = (1/B) Σ_i −Σ_k y_ik · log softmax(z_i + a_i)_k
//
// with inputs z (logits, B×K), a (additive logit adjustment, B×K) and y
// (targets, B×K, rows usually one-hot). Its symbolic derivative with respect
// to z is (g/B)·(softmax(z_i+a_i)·Σ_k y_ik − y_i). It exists because
// gorgonia's LogSoftMax shifts every row by the first element of the whole
// tensor rather than the row maximum, and starts one goroutine per row.
type softmaxCE struct{ dt tensor.Dtype }

func softmaxCrossEntropy(z, a, y *G.Node) (*G.Node, error) {
	return G.ApplyOp(softmaxCE{dt: z.Dtype()}, z, a, y)
}

func (op softmaxCE) Arity() int { return 3 }
func (op softmaxCE) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a, a, op.dt)
}
func (op softmaxCE) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return tensor.ScalarShape(), nil
}
func (op softmaxCE) ReturnsPtr() bool      { return false }
func (op softmaxCE) CallsExtern() bool     { return false }
func (op softmaxCE) OverwritesInput() int  { return -1 }
func (op softmaxCE) WriteHash(h hash.Hash) { fmt.Fprintf(h, "SoftmaxCE{%v}", op.dt) }
func (op softmaxCE) Hashcode() uint32      { return hashOf(op) }
func (op softmaxCE) String() string        { return fmt.Sprintf("SoftmaxCE{%v}", op.dt) }
func (op softmaxCE) DiffWRT(int) []bool    { return []bool{true, false, false} }

func (op softmaxCE) SymDiff(in G.Nodes, out, grad *G.Node) (G.Nodes, error) {
	d, err := G.ApplyOp(softmaxCEDiff{op}, in[0], in[1], in[2], grad)
	return G.Nodes{d, nil, nil}, err
}

func (op softmaxCE) Do(in ...G.Value) (G.Value, error) {
	z, a, y, err := ceInputs(in)
	if err != nil {
		return nil, err
	}
	rows, k := z.Shape()[0], z.Shape()[1]
	switch op.dt {
	case tensor.Float32:
		l := ceLoss(z.Float32s(), a.Float32s(), y.Float32s(), nil, rows, k, 0)
		return G.NewF32(float32(l)), nil
	case tensor.Float64:
		l := ceLoss(z.Float64s(), a.Float64s(), y.Float64s(), nil, rows, k, 0)
		return G.NewF64(l), nil
	}
	return nil, fmt.Errorf("model: softmax cross-entropy: unsupported dtype %v", op.dt)
}

// softmaxCEDiff computes dLoss/dz given (z, a, y, g).
type softmaxCEDiff struct{ softmaxCE }

func (op softmaxCEDiff) Arity() int { return 4 }
func (op softmaxCEDiff) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a, a, op.dt, a)
}
func (op softmaxCEDiff) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return in[0].(tensor.Shape).Clone(), nil
}
func (op softmaxCEDiff) WriteHash(h hash.Hash) { fmt.Fprintf(h, "SoftmaxCEDiff{%v}", op.dt) }
func (op softmaxCEDiff) Hashcode() uint32      { return hashOf(op) }
func (op softmaxCEDiff) String() string        { return fmt.Sprintf("SoftmaxCEDiff{%v}", op.dt) }

func (op softmaxCEDiff) Do(in ...G.Value) (G.Value, error) {
	z, a, y, err := ceInputs(in[:3])
	if err != nil {
		return nil, err
	}
	g, err := scalarOf(in[3])
	if err != nil {
		return nil, err
	}
	rows, k := z.Shape()[0], z.Shape()[1]
	out := tensor.New(tensor.Of(op.dt), tensor.WithShape(rows, k))
	switch op.dt {
	case tensor.Float32:
		ceLoss(z.Float32s(), a.Float32s(), y.Float32s(), out.Float32s(), rows, k, g)
	case tensor.Float64:
		ceLoss(z.Float64s(), a.Float64s(), y.Float64s(), out.Float64s(), rows, k, g)
	default:
		return nil, fmt.Errorf("model: softmax cross-entropy: unsupported dtype %v", op.dt)
	}
	return out, nil
}

func ceInputs(in []G.Value) (z, a, y *tensor.Dense, err error) {
	if len(in) != 3 {
		return nil, nil, nil, fmt.Errorf("model: softmax cross-entropy wants 3 inputs, got %d", len(in))
	}
	var ok [3]bool
	z, ok[0] = in[0].(*tensor.Dense)
	a, ok[1] = in[1].(*tensor.Dense)
	y, ok[2] = in[2].(*tensor.Dense)
	if !ok[0] || !ok[1] || !ok[2] || z.Dims() != 2 || !z.Shape().Eq(a.Shape()) || !z.Shape().Eq(y.Shape()) {
		return nil, nil, nil, fmt.Errorf("model: softmax cross-entropy wants three dense B×K matrices")
	}
	return z, a, y, nil
}

func scalarOf(v G.Value) (float64, error) {
	switch v := v.(type) {
	case *G.F32:
		return float64(*v), nil
	case *G.F64:
		return float64(*v), nil
	case tensor.Tensor:
		if v.Shape().TotalSize() == 1 {
			switch d := v.Data().(type) {
			case []float32:
				return float64(d[0]), nil
			case []float64:
				return d[0], nil
			case float32:
				return float64(d), nil
			case float64:
				return d, nil
			}
		}
	}
	return 0, fmt.Errorf("model: softmax cross-entropy: gradient %T is not a scalar", v)
}

// ceLoss returns the mean cross-entropy of rows×k logits z+a against y. If
// dz is non-nil it also writes g·dLoss/dz into it. Accumulation is in float64.
func ceLoss[T float32 | float64](z, a, y, dz []T, rows, k int, g float64) float64 {
	var total float64
	inv := 1 / float64(rows)
	for i := range rows {
		zi, ai, yi := z[i*k:(i+1)*k], a[i*k:(i+1)*k], y[i*k:(i+1)*k]
		m := math.Inf(-1)
		for j := range k {
			m = max(m, float64(zi[j])+float64(ai[j]))
		}
		var s, ysum, dot float64
		for j := range k {
			v := float64(zi[j]) + float64(ai[j]) - m
			s += math.Exp(v)
			ysum += float64(yi[j])
			dot += float64(yi[j]) * v
		}
		ls := math.Log(s)
		total += ysum*ls - dot
		if dz != nil {
			di := dz[i*k : (i+1)*k]
			for j := range k {
				p := math.Exp(float64(zi[j]) + float64(ai[j]) - m - ls)
				di[j] = T(g * inv * (p*ysum - float64(yi[j])))
			}
		}
	}
	return total * inv
}

func hashOf(s fmt.Stringer) uint32 {
	h := fnv.New32a()
	fmt.Fprint(h, s.String())
	return h.Sum32()
}

package model

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// paramNodes binds every parameter tensor into g, in n.params order.
func (n *Net) paramNodes(g *G.ExprGraph) G.Nodes {
	ns := make(G.Nodes, len(n.params))
	for i, p := range n.params {
		ns[i] = G.NewTensor(g, n.dt, len(p.shape), G.WithShape(p.shape...), G.WithValue(p.val), G.WithName(p.name))
	}
	return ns
}

// dense returns relu(x·w + b).
func dense(x, w, b *G.Node) (*G.Node, error) {
	xw, err := G.Mul(x, w)
	if err != nil {
		return nil, err
	}
	z, err := G.BroadcastAdd(xw, b, nil, []byte{0})
	if err != nil {
		return nil, err
	}
	return G.Rectify(z)
}

// features builds the backbone on x (rows×In); pn are the parameter nodes.
func (n *Net) features(x *G.Node, rows int, pn G.Nodes) (*G.Node, error) {
	h := x
	var err error
	switch n.cfg.Arch {
	case "mlp":
		for i := range n.cfg.Hidden {
			if h, err = dense(h, pn[2*i], pn[2*i+1]); err != nil {
				return nil, err
			}
		}
	case "cnn":
		s := imageSide(n.cfg.In)
		if h, err = G.Reshape(h, tensor.Shape{rows, 1, s, s}); err != nil {
			return nil, err
		}
		for i := range 2 {
			if h, err = G.Conv2d(h, pn[2*i], tensor.Shape{3, 3}, []int{1, 1}, []int{1, 1}, []int{1, 1}); err != nil {
				return nil, err
			}
			if h, err = G.BroadcastAdd(h, pn[2*i+1], nil, []byte{0, 2, 3}); err != nil {
				return nil, err
			}
			if h, err = G.Rectify(h); err != nil {
				return nil, err
			}
			if h, err = G.MaxPool2D(h, tensor.Shape{2, 2}, []int{0, 0}, []int{2, 2}); err != nil {
				return nil, err
			}
		}
		if h, err = G.Reshape(h, tensor.Shape{rows, cnnC2 * (s / 4) * (s / 4)}); err != nil {
			return nil, err
		}
		if h, err = dense(h, pn[4], pn[5]); err != nil {
			return nil, err
		}
	case "identity":
		if n.cfg.Adapter > 0 {
			if h, err = dense(h, pn[0], pn[1]); err != nil {
				return nil, err
			}
		}
	}
	return h, nil
}

// logits builds f·W + b with the head parameter nodes (the last two of pn).
func (n *Net) logits(f *G.Node, pn G.Nodes) (*G.Node, error) {
	fw, err := G.Mul(f, pn[len(pn)-2])
	if err != nil {
		return nil, err
	}
	return G.BroadcastAdd(fw, pn[len(pn)-1], nil, []byte{0})
}

// trainGraph is one training graph with its machine and input tensors.
type trainGraph struct {
	g      *G.ExprGraph
	vm     G.VM
	rows   int  // B
	mix    bool // x holds 2B rows (x1 then x2) mixed by bm, cm
	x      *tensor.Dense
	y      *tensor.Dense // one-hot B×K
	adj    *tensor.Dense // B×K logit adjustment (zero for mix)
	bm, cm *tensor.Dense // B×d: β_i and 1−β_i repeated along features
	loss   G.Value
	grads  []G.Value // aligned with Net.params; preallocated, filled by Read
}

func (n *Net) buildTrain(mix bool) (*trainGraph, error) {
	b, k, d := n.cfg.Batch, n.cfg.Classes, n.d
	t := &trainGraph{g: G.NewGraph(), rows: b, mix: mix}
	g := t.g
	xr := b
	if mix {
		xr = 2 * b
	}
	mat := func(name string, r, c int) (*G.Node, *tensor.Dense) {
		v := tensor.New(tensor.Of(n.dt), tensor.WithShape(r, c))
		return G.NewMatrix(g, n.dt, G.WithShape(r, c), G.WithValue(v), G.WithName(name)), v
	}
	var x, y, adj *G.Node
	x, t.x = mat("x", xr, n.cfg.In)
	y, t.y = mat("y", b, k)
	adj, t.adj = mat("adj", b, k)
	pn := n.paramNodes(g)
	f, err := n.features(x, xr, pn)
	if err != nil {
		return nil, fmt.Errorf("model: building %s backbone: %w", n.cfg.Arch, err)
	}
	if mix {
		var bmN, cmN *G.Node
		bmN, t.bm = mat("beta", b, d)
		cmN, t.cm = mat("one_minus_beta", b, d)
		if f, err = mixRows(f, bmN, cmN, b); err != nil {
			return nil, fmt.Errorf("model: building mix: %w", err)
		}
	}
	z, err := n.logits(f, pn)
	if err != nil {
		return nil, fmt.Errorf("model: building head: %w", err)
	}
	loss, err := softmaxCrossEntropy(z, adj, y)
	if err != nil {
		return nil, fmt.Errorf("model: building loss: %w", err)
	}
	gr, err := G.Grad(loss, pn...)
	if err != nil {
		return nil, fmt.Errorf("model: differentiating: %w", err)
	}
	outs := G.Nodes{G.Read(loss, &t.loss)}
	t.grads = make([]G.Value, len(pn))
	for i, p := range n.params {
		t.grads[i] = tensor.New(tensor.Of(n.dt), tensor.WithShape(p.shape...))
		outs = append(outs, G.Read(gr[i], &t.grads[i]))
	}
	ins := append(G.Nodes{x, y, adj}, pn...)
	if mix {
		ins = append(ins, g.ByName("beta")[0], g.ByName("one_minus_beta")[0])
	}
	if t.vm, err = newMachine(g, ins, outs); err != nil {
		return nil, err
	}
	return t, nil
}

// mixRows returns β⊙f[:B] + (1−β)⊙f[B:] for f with 2B rows.
func mixRows(f, bm, cm *G.Node, b int) (*G.Node, error) {
	f1, err := G.Slice(f, G.S(0, b))
	if err != nil {
		return nil, err
	}
	f2, err := G.Slice(f, G.S(b, 2*b))
	if err != nil {
		return nil, err
	}
	m1, err := G.HadamardProd(f1, bm)
	if err != nil {
		return nil, err
	}
	m2, err := G.HadamardProd(f2, cm)
	if err != nil {
		return nil, err
	}
	return G.Add(m1, m2)
}

// evalGraph computes features and logits for EvalBatch rows.
type evalGraph struct {
	g            *G.ExprGraph
	vm           G.VM
	rows         int
	x            *tensor.Dense
	feat, logits G.Value
}

func (n *Net) buildEval() (*evalGraph, error) {
	r := n.cfg.EvalBatch
	e := &evalGraph{g: G.NewGraph(), rows: r}
	e.x = tensor.New(tensor.Of(n.dt), tensor.WithShape(r, n.cfg.In))
	x := G.NewMatrix(e.g, n.dt, G.WithShape(r, n.cfg.In), G.WithValue(e.x), G.WithName("x"))
	pn := n.paramNodes(e.g)
	f, err := n.features(x, r, pn)
	if err != nil {
		return nil, fmt.Errorf("model: building %s backbone: %w", n.cfg.Arch, err)
	}
	z, err := n.logits(f, pn)
	if err != nil {
		return nil, fmt.Errorf("model: building head: %w", err)
	}
	e.feat = tensor.New(tensor.Of(n.dt), tensor.WithShape(r, n.d))
	e.logits = tensor.New(tensor.Of(n.dt), tensor.WithShape(r, n.cfg.Classes))
	outs := G.Nodes{G.Read(f, &e.feat), G.Read(z, &e.logits)}
	if e.vm, err = newMachine(e.g, append(G.Nodes{x}, pn...), outs); err != nil {
		return nil, err
	}
	return e, nil
}

// newMachine compiles only the part of g that outs depend on. G.Grad adds
// derivative nodes for every operand of an op (e.g. ∂/∂x of x·W for the
// input x); compiling the whole graph would run them every step for nothing
// (a third of the matmul work of an MLP step).
func newMachine(g *G.ExprGraph, ins, outs G.Nodes) (G.VM, error) {
	prog, locs, err := G.CompileFunction(g, ins, outs)
	if err != nil {
		return nil, fmt.Errorf("model: compiling graph: %w", err)
	}
	return G.NewTapeMachine(g, G.WithPrecompiled(prog, locs)), nil
}

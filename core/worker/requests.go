package worker

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"selmix/core/train"
)

// Requests.

func (c *Client) Evaluate(split train.Split, centroids bool) (*train.Eval, error) {
	rep, err := c.call(&Frame{Header: map[string]any{"op": "evaluate", "split": split.String(), "centroids": centroids}})
	if err != nil {
		return nil, err
	}
	var er evaluateReply
	if err := c.decode("evaluate", rep, &er); err != nil {
		return nil, err
	}
	K, d := c.info.K, c.info.D
	rows, ok := whole(er.Rows)
	if !ok || rows < 1 {
		return nil, c.bad("evaluate", "\"rows\" is %s, want a positive integer", show(er.Rows))
	}
	counts, err := c.array(rep, "evaluate", "C", "i8", K, K)
	if err != nil {
		return nil, err
	}
	var sum int64
	for _, v := range counts.Ints() {
		if v < 0 {
			return nil, c.bad("evaluate", "negative count %d in C", v)
		}
		sum += v
	}
	if sum != int64(rows) {
		return nil, c.bad("evaluate", "C counts %d samples, \"rows\" says %d", sum, rows)
	}
	C := mat.NewDense(K, K, counts.Floats())
	C.Scale(1/float64(rows), C) // as train.Confusion.Result does, to the last bit
	ev := &train.Eval{C: C, Rows: rows}
	if er.System != nil {
		ev.Sys = er.System.sys
	}
	if centroids {
		var Z, W, b *Array
		if Z, err = c.array(rep, "evaluate", "Z", "f8", K, d); err != nil {
			return nil, err
		}
		if W, err = c.array(rep, "evaluate", "W", "f8", d, K); err != nil {
			return nil, err
		}
		if b, err = c.array(rep, "evaluate", "b", "f8", K); err != nil {
			return nil, err
		}
		ev.Z, ev.W, ev.B = mat.NewDense(K, d, Z.Floats()), mat.NewDense(d, K, W.Floats()), b.Floats()
	}
	if ev.Sys != nil && ev.Sys.Device == "" {
		ev.Sys.Device = c.info.Device
	}
	c.fillGPUs(ev.Sys)
	return ev, nil
}

func (c *Client) Pseudo(oracle bool) error {
	if c.info.Unlabeled == 0 {
		return nil
	}
	_, err := c.call(&Frame{Header: map[string]any{"op": "pseudo", "oracle": oracle}})
	return err
}

func (c *Client) Train(r *train.TrainRequest) (float64, error) {
	h := map[string]any{
		"op": "train", "mode": r.Mode.String(), "steps": len(r.LR), "batch": r.Batch, "beta_min": r.BetaMin,
		"weight_decay": r.WeightDecay, "momentum": r.Momentum, "backbone_lr_scale": 0.1,
	}
	if r.FreezeBackbone {
		h["backbone_lr_scale"] = 0.0
	}
	if r.Ahead > 0 {
		h["ahead"] = r.Ahead
	}
	f := &Frame{Header: h, Arrays: []Array{F64("lr", r.LR, len(r.LR))}}
	K := c.info.K
	sentP, sentSoft := false, false
	if r.Mode.DrawsPairs() && !samePointer(c.sentP, r.P) {
		if len(r.P) != K*K {
			panic(fmt.Sprintf("worker: P has %d entries, want %d", len(r.P), K*K))
		}
		f.Arrays = append(f.Arrays, F64("P", r.P, K, K))
		sentP = true
	}
	if r.Mode == train.ModeSoft {
		h["sampling"] = r.Sampling.String()
		// Targets and adjustment travel together, only when either changed
		// (the engine makes new ones at each refresh).
		sameA := samePointer(c.sentA, r.Adjust) || (c.sentA == nil && r.Adjust == nil)
		if !samePointer(c.sentT, r.Targets) || !sameA {
			if len(r.Targets) != K*K || (r.Adjust != nil && len(r.Adjust) != K) {
				panic(fmt.Sprintf("worker: %d targets and %d adjustments, want %d and nil or %d", len(r.Targets), len(r.Adjust), K*K, K))
			}
			adj := r.Adjust
			if adj == nil {
				adj = make([]float64, K)
			}
			f.Arrays = append(f.Arrays, F64("targets", r.Targets, K, K), F64("adjust", adj, K))
			sentSoft = true
		}
	}
	rep, err := c.call(f)
	if err != nil {
		return 0, err
	}
	if sentP {
		c.sentP = r.P
	}
	if sentSoft {
		c.sentT, c.sentA = r.Targets, r.Adjust
	}
	var tr trainReply
	if err := c.decode("train", rep, &tr); err != nil {
		return 0, err
	}
	if tr.Loss == nil {
		return 0, c.bad("train", "no \"loss\" number in the reply")
	}
	return *tr.Loss, nil
}

// samePointer reports whether a and b are the same slice (the engine makes
// a new P whenever it changes one).
func samePointer(a, b []float64) bool {
	return len(a) > 0 && len(a) == len(b) && &a[0] == &b[0]
}

func (c *Client) Save() (*train.Saved, error) {
	rep, err := c.call(&Frame{Header: map[string]any{"op": "save"}})
	if err != nil {
		return nil, err
	}
	var sr saveReply
	if err := c.decode("save", rep, &sr); err != nil {
		return nil, err
	}
	format := ""
	if sr.Format != nil {
		format = *sr.Format
	}
	if format == "" {
		return nil, c.bad("save", "no \"format\" in the reply")
	}
	state := rep.Array("state")
	if state == nil || state.Dtype != "u1" {
		return nil, c.bad("save", "no u1 array \"state\"")
	}
	K, d := c.info.K, c.info.D
	W, err := c.array(rep, "save", "W", "f8", d, K)
	if err != nil {
		return nil, err
	}
	b, err := c.array(rep, "save", "b", "f8", K)
	if err != nil {
		return nil, err
	}
	return &train.Saved{Format: format, State: state.Data, W: W.Floats(), B: b.Floats()}, nil
}

// Load restores the worker from a checkpoint taken by this kind of worker.
func (c *Client) Load(s *train.Saved) error {
	_, err := c.call(&Frame{Header: map[string]any{"op": "load", "format": s.Format}, Arrays: []Array{Bytes("state", s.State)}})
	if err != nil {
		return err
	}
	c.sentP = nil // the worker has the checkpoint's P; the next train sends the engine's
	c.sentT, c.sentA = nil, nil
	return nil
}

// decode decodes rep's header into dst, the reply type of op; a reply
// that does not decode ends the session, as bad does.
func (c *Client) decode(op string, rep *Frame, dst any) error {
	if err := decodeReply(op, rep, dst); err != nil {
		c.broken = err
		c.kill()
		return err
	}
	return nil
}

// bad ends the session on a reply that breaks the protocol.
func (c *Client) bad(op, format string, args ...any) error {
	c.broken = fmt.Errorf("worker sent a bad reply to %q: %s", op, fmt.Sprintf(format, args...))
	c.kill()
	return c.broken
}

// array returns the reply's array name, checking its dtype and shape.
func (c *Client) array(rep *Frame, op, name, dtype string, shape ...int) (*Array, error) {
	a := rep.Array(name)
	if a == nil {
		return nil, c.bad(op, "no array %q", name)
	}
	if a.Dtype != dtype || !equalShape(a.Shape, shape) {
		return nil, c.bad(op, "array %q is %s %v, want %s %v", name, a.Dtype, a.Shape, dtype, shape)
	}
	if dtype == "f8" {
		for i, v := range a.Floats() {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, c.bad(op, "array %q holds %v at flat index %d", name, v, i)
			}
		}
	}
	return a, nil
}

func equalShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

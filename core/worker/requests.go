package worker

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"

	"gonum.org/v1/gonum/mat"

	"selmix/core/train"
)

// The requests of docs/worker-protocol.md, one type each. A request's
// header is its type's fields, its "op" and the "arrays" sent beside it,
// keys in sorted order and compact, as json.Marshal writes a map: the
// bytes of docs/worker-protocol/requests/ (golden_test.go).

// Request is the header of one request.
type Request interface {
	// Op is the request's "op".
	Op() string
}

// HelloRequest is always the first request.
type HelloRequest struct {
	Protocol int    `json:"protocol"` // the version selmix speaks: Protocol
	Seed     uint64 `json:"seed"`     // seeds every random generator the worker's steps use
}

// LoadRequest restores a checkpoint: its array "state" (u1) holds the
// bytes a SaveRequest's reply gave, in Format.
type LoadRequest struct {
	Format string `json:"format"`
}

// EvaluateRequest asks for the statistics of a split: the array C, and Z,
// W and b with Centroids.
type EvaluateRequest struct {
	Split     string `json:"split"` // "val" or "test"
	Centroids bool   `json:"centroids"`
}

// PseudoRequest relabels the unlabeled set, by the model's predictions or
// by its true labels (Oracle).
type PseudoRequest struct {
	Oracle bool `json:"oracle"`
}

// TrainRequest takes Steps steps. Its arrays: "lr" (f8 [Steps]), and when
// they changed "P" (f8 [K, K]; modes mixup and resample) or "targets" (f8
// [K, K]) with "adjust" (f8 [K]; mode soft).
type TrainRequest struct {
	Mode            string  `json:"mode"` // mixup, ce, soft or resample
	Steps           int     `json:"steps"`
	Batch           int     `json:"batch"`
	BetaMin         float64 `json:"beta_min"`
	WeightDecay     float64 `json:"weight_decay"`
	Momentum        float64 `json:"momentum"`
	BackboneLRScale float64 `json:"backbone_lr_scale"`  // 0 freezes the backbone
	Ahead           int     `json:"ahead,omitempty"`    // steps likely to follow with the same settings
	Sampling        string  `json:"sampling,omitempty"` // mode soft: instance or class
}

// FeaturesRequest asks for the head's inputs of samples (the samples
// gain form): a split's ("val" or "test": arrays X, logits and y), or
// with Split "train" the labeled samples its array "pick" (i8 [M, 2]:
// class, index among the class's labeled samples) names (array X). Only
// a worker whose hello said "features": true serves it.
type FeaturesRequest struct {
	Split string `json:"split"`
}

// SaveRequest asks for a checkpoint: the reply's arrays state, W and b.
type SaveRequest struct{}

// ByeRequest ends the session.
type ByeRequest struct{}

func (HelloRequest) Op() string    { return "hello" }
func (LoadRequest) Op() string     { return "load" }
func (EvaluateRequest) Op() string { return "evaluate" }
func (PseudoRequest) Op() string   { return "pseudo" }
func (TrainRequest) Op() string    { return "train" }
func (SaveRequest) Op() string     { return "save" }
func (FeaturesRequest) Op() string { return "features" }
func (ByeRequest) Op() string      { return "bye" }

// requestFrame is the frame of r and its arrays.
func requestFrame(r Request, arrays []Array) (*Frame, error) {
	js, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(js, &fields); err != nil {
		return nil, err
	}
	// A map, so that WriteFrame sorts the keys with "op" and "arrays";
	// the values go out as r's fields encode.
	h := make(map[string]any, len(fields)+1)
	for k, v := range fields {
		h[k] = v
	}
	h["op"] = r.Op()
	return &Frame{Header: h, Arrays: arrays}, nil
}

// WriteRequest writes the frame of request r and its arrays to w.
func WriteRequest(w io.Writer, r Request, arrays ...Array) error {
	f, err := requestFrame(r, arrays)
	if err != nil {
		return err
	}
	return WriteFrame(w, f)
}

// requests holds a zero value of each request type.
var requests = []Request{HelloRequest{}, LoadRequest{}, EvaluateRequest{}, PseudoRequest{}, TrainRequest{}, SaveRequest{}, ByeRequest{}, FeaturesRequest{}}

// DecodeRequest decodes the header of a request frame into the type of
// its "op" (a pointer to it, such as *TrainRequest); its arrays stay in
// f. Keys the type does not know are ignored; a field of the wrong JSON
// type is an error.
func DecodeRequest(f *Frame) (Request, error) {
	op, _ := f.Header["op"].(string)
	i := slices.IndexFunc(requests, func(r Request) bool { return r.Op() == op })
	if i < 0 {
		return nil, fmt.Errorf("unknown op %q", op)
	}
	r := reflect.New(reflect.TypeOf(requests[i])).Interface().(Request)
	raw := f.header
	if raw == nil { // a frame built in memory
		var err error
		if raw, err = json.Marshal(f.Header); err != nil {
			return nil, err
		}
	}
	if err := json.Unmarshal(raw, r); err != nil {
		return nil, fmt.Errorf("%s: %v", op, err)
	}
	return r, nil
}

func (c *Client) Evaluate(split train.Split, centroids bool) (*train.Eval, error) {
	rep, err := c.call(EvaluateRequest{Split: split.String(), Centroids: centroids})
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

// HasFeatures reports whether the worker serves the features request
// (its hello said "features": true): without it the samples gain form
// cannot run (train.Featurer).
func (c *Client) HasFeatures() bool { return c.features }

// Features returns a split's samples through the worker's model: their
// head inputs, logits and labels (train.Featurer).
func (c *Client) Features(split train.Split) (X, logits *mat.Dense, y []int, err error) {
	if !c.features {
		return nil, nil, nil, fmt.Errorf("the worker does not serve the features request")
	}
	rep, err := c.call(FeaturesRequest{Split: split.String()})
	if err != nil {
		return nil, nil, nil, err
	}
	K, d := c.info.K, c.info.D
	n := c.info.Val
	if split == train.SplitTest {
		n = c.info.Test
	}
	xa, err := c.array(rep, "features", "X", "f4", n, d)
	if err != nil {
		return nil, nil, nil, err
	}
	la, err := c.array(rep, "features", "logits", "f4", n, K)
	if err != nil {
		return nil, nil, nil, err
	}
	ya, err := c.array(rep, "features", "y", "i8", n)
	if err != nil {
		return nil, nil, nil, err
	}
	y = make([]int, n)
	for i, v := range ya.Ints() {
		if v < 0 || v >= int64(K) {
			return nil, nil, nil, c.bad("features", "label %d of sample %d outside [0, %d)", v, i, K)
		}
		y[i] = int(v)
	}
	if X, err = finiteDense(c, xa, n, d); err != nil {
		return nil, nil, nil, err
	}
	if logits, err = finiteDense(c, la, n, K); err != nil {
		return nil, nil, nil, err
	}
	return X, logits, y, nil
}

// TrainFeatures returns the head inputs of the labeled training samples
// pick names: pick[k] lists indices among class k's (train.Featurer).
func (c *Client) TrainFeatures(pick [][]int) (*mat.Dense, error) {
	if !c.features {
		return nil, fmt.Errorf("the worker does not serve the features request")
	}
	var flat []int64
	for k, p := range pick {
		for _, i := range p {
			if k >= len(c.info.TrainCounts) || i < 0 || i >= c.info.TrainCounts[k] {
				return nil, fmt.Errorf("features: sample %d of class %d, which has %d", i, k, c.info.TrainCounts[min(k, len(c.info.TrainCounts)-1)])
			}
			flat = append(flat, int64(k), int64(i))
		}
	}
	m := len(flat) / 2
	rep, err := c.call(FeaturesRequest{Split: "train"}, I64("pick", flat, m, 2))
	if err != nil {
		return nil, err
	}
	xa, err := c.array(rep, "features", "X", "f4", m, c.info.D)
	if err != nil {
		return nil, err
	}
	return finiteDense(c, xa, m, c.info.D)
}

// finiteDense is a float array of a reply as an r×c matrix; a NaN or an
// infinity ends the session as a bad reply.
func finiteDense(c *Client, a *Array, r, cols int) (*mat.Dense, error) {
	v := a.Floats()
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, c.bad("features", "array %q holds %v at flat index %d", a.Name, x, i)
		}
	}
	return mat.NewDense(r, cols, v), nil
}

func (c *Client) Pseudo(oracle bool) error {
	if c.info.Unlabeled == 0 {
		return nil
	}
	_, err := c.call(PseudoRequest{Oracle: oracle})
	return err
}

func (c *Client) Train(r *train.TrainRequest) (float64, error) {
	h := TrainRequest{
		Mode: r.Mode.String(), Steps: len(r.LR), Batch: r.Batch, BetaMin: r.BetaMin,
		WeightDecay: r.WeightDecay, Momentum: r.Momentum, BackboneLRScale: 0.1,
	}
	if r.FreezeBackbone {
		h.BackboneLRScale = 0
	}
	if r.Ahead > 0 {
		h.Ahead = r.Ahead
	}
	arrays := []Array{F64("lr", r.LR, len(r.LR))}
	K := c.info.K
	sentP, sentSoft := false, false
	if r.Mode.DrawsPairs() && !samePointer(c.sentP, r.P) {
		if len(r.P) != K*K {
			panic(fmt.Sprintf("worker: P has %d entries, want %d", len(r.P), K*K))
		}
		arrays = append(arrays, F64("P", r.P, K, K))
		sentP = true
	}
	if r.Mode == train.ModeSoft {
		h.Sampling = r.Sampling.String()
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
			arrays = append(arrays, F64("targets", r.Targets, K, K), F64("adjust", adj, K))
			sentSoft = true
		}
	}
	rep, err := c.call(h, arrays...)
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
	rep, err := c.call(SaveRequest{})
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
	_, err := c.call(LoadRequest{Format: s.Format}, Bytes("state", s.State))
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

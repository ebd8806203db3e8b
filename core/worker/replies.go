package worker

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"

	"selmix/core/loop"
	"selmix/core/train"
	"selmix/internal/safetext"
)

// The replies of docs/worker-protocol.md, one type each. A reply's header
// is decoded into its type: a field of the wrong JSON type is one error
// naming the request and the field, and each reply's check says which
// required field is missing or out of bounds. Keys a reply does not
// know are ignored, so a newer worker may add some.

// status is what every reply says besides its request's own fields.
type status struct {
	OK      *bool    `json:"ok"`
	Error   *string  `json:"error"`
	Reason  string   `json:"reason"`  // ReasonOutOfMemory or ReasonBadInput, with ok false
	Seconds *float64 `json:"seconds"` // the time the worker spent on the request
}

// helloReply is the reply to hello: the worker's description of itself.
type helloReply struct {
	Protocol    *float64  `json:"protocol"`
	Worker      string    `json:"worker"`
	Device      string    `json:"device"`
	K           *float64  `json:"k"`
	D           *float64  `json:"d"`
	ClassNames  []string  `json:"class_names"`
	TrainCounts []float64 `json:"train_counts"`
	Sizes       *struct {
		Labeled   *float64 `json:"labeled"`
		Unlabeled *float64 `json:"unlabeled"`
		Val       *float64 `json:"val"`
		Test      *float64 `json:"test"`
	} `json:"sizes"`
	// For display and the run's record: a bad value reads as unknown.
	WorldSize json.RawMessage `json:"world_size"`
	GPUs      json.RawMessage `json:"gpus"`
	Env       json.RawMessage `json:"env"`
	// Features says the worker serves the features request; absent or
	// any value but true: it does not (workers before it).
	Features json.RawMessage `json:"features"`
}

// evaluateReply is the header of evaluate's reply; the statistics are its
// arrays (C, and Z, W and b with centroids).
type evaluateReply struct {
	Rows   *float64     `json:"rows"`
	System *systemReply `json:"system"`
}

// systemReply is evaluate's optional "system": for display only, so a
// value of the wrong type, negative or not finite reads as unknown
// (parseSystem), never as an error.
type systemReply struct{ sys *loop.System }

func (s *systemReply) UnmarshalJSON(b []byte) error {
	var v any
	if json.Unmarshal(b, &v) == nil {
		s.sys = parseSystem(v)
	}
	return nil
}

// trainReply is the reply to train.
type trainReply struct {
	Loss *float64 `json:"loss"`
}

// saveReply is the header of save's reply; the state, W and b are its
// arrays.
type saveReply struct {
	Format *string `json:"format"`
}

// decodeReply decodes rep's header into dst (a pointer to a reply type);
// the error names op and the offending field.
func decodeReply(op string, rep *Frame, dst any) error {
	raw := rep.header
	if raw == nil { // a frame built in memory (tests)
		var err error
		if raw, err = json.Marshal(rep.Header); err != nil {
			return fmt.Errorf("worker sent a bad reply to %q: %v", op, err)
		}
	}
	err := json.Unmarshal(raw, dst)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("worker sent a bad reply to %q: field %q is a JSON %s, want %s", op, te.Field, te.Value, wantJSON(te.Type))
	}
	return fmt.Errorf("worker sent a bad reply to %q: %v", op, err)
}

// wantJSON names the JSON type a Go type is decoded from.
func wantJSON(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list of " + strings.TrimPrefix(wantJSON(t.Elem()), "a ") + "s"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a number"
}

// whole is *p as an int if it is an integer JSON can hold exactly.
func whole(p *float64) (int, bool) {
	if p == nil {
		return 0, false
	}
	f := *p
	if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int(f), true
}

// show prints an optional number for an error message.
func show(p *float64) string {
	if p == nil {
		return "missing"
	}
	return fmt.Sprint(*p)
}

// helloFeatures reports whether hello's reply says "features": true.
func helloFeatures(rep *Frame) bool {
	var h helloReply
	if decodeReply("hello", rep, &h) != nil {
		return false
	}
	var v any
	json.Unmarshal(h.Features, &v)
	return v == true
}

// parseHello checks the worker's description of itself.
func parseHello(rep *Frame) (train.Info, error) {
	var h helloReply
	if err := decodeReply("hello", rep, &h); err != nil {
		return train.Info{}, err
	}
	bad := func(format string, args ...any) (train.Info, error) {
		return train.Info{}, fmt.Errorf("worker sent a bad reply to \"hello\": %s", fmt.Sprintf(format, args...))
	}
	if p, ok := whole(h.Protocol); !ok || p != Protocol {
		return bad("protocol %s, this selmix speaks %d", show(h.Protocol), Protocol)
	}
	K, ok1 := whole(h.K)
	d, ok2 := whole(h.D)
	if !ok1 || !ok2 || K < 2 || d < 1 || K > 1<<20 || d > 1<<24 {
		return bad("k = %s and d = %s; want integers k ≥ 2, d ≥ 1", show(h.K), show(h.D))
	}
	info := train.Info{K: K, D: d}
	if len(h.TrainCounts) != K {
		return bad("%d train_counts for k = %d", len(h.TrainCounts), K)
	}
	for i, f := range h.TrainCounts {
		n, ok := whole(&f)
		if !ok || n < 0 {
			return bad("train_counts[%d] = %v, want a count", i, f)
		}
		info.TrainCounts = append(info.TrainCounts, n)
	}
	if len(h.ClassNames) > 0 {
		if len(h.ClassNames) != K {
			return bad("%d class_names for k = %d", len(h.ClassNames), K)
		}
		for i, s := range h.ClassNames {
			if safetext.Control(s) >= 0 {
				return bad("class_names[%d] = %q holds a control character", i, s)
			}
		}
		info.ClassNames = h.ClassNames
	}
	if h.Sizes == nil {
		return bad("no \"sizes\"")
	}
	for _, f := range []struct {
		key string
		v   *float64
		dst *int
	}{{"labeled", h.Sizes.Labeled, &info.Labeled}, {"unlabeled", h.Sizes.Unlabeled, &info.Unlabeled}, {"val", h.Sizes.Val, &info.Val}, {"test", h.Sizes.Test, &info.Test}} {
		n, ok := whole(f.v)
		if !ok || n < 0 {
			return bad("sizes.%s = %s, want a count", f.key, show(f.v))
		}
		*f.dst = n
	}
	if info.Labeled == 0 || info.Val == 0 || info.Test == 0 {
		return bad("sizes labeled %d, val %d, test %d: labeled, val and test must not be empty", info.Labeled, info.Val, info.Test)
	}
	info.Device = safetext.Line(strings.TrimSpace(h.Device + " (" + h.Worker + ")"))
	var ws, gpus, env any
	json.Unmarshal(h.WorldSize, &ws)
	json.Unmarshal(h.GPUs, &gpus)
	json.Unmarshal(h.Env, &env)
	info.Env = parseEnv(env)
	info.WorldSize = worldSize(ws)
	if l, ok := gpus.([]any); ok {
		for _, v := range l {
			if id := gpuID(v); id != "" && len(info.GPUs) < maxGPUs {
				info.GPUs = append(info.GPUs, id)
			}
		}
	}
	return info, nil
}

// parseEnv reads hello's "env", what the worker's results depend on: an
// object of at most maxEnv entries whose keys and values are made
// printable and cut to maxGPUText runes; a number or boolean is written as
// JSON writes it, any other value and an empty key are left out. nil when
// there is none.
func parseEnv(v any) map[string]string {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	keys := slices.Sorted(maps.Keys(m))
	out := map[string]string{}
	for _, k := range keys {
		key := gpuID(k)
		var val string
		switch x := m[k].(type) {
		case string:
			val = gpuID(x)
		case float64, bool:
			b, _ := json.Marshal(x)
			val = string(b)
		default:
			continue
		}
		if key == "" || len(out) == maxEnv {
			continue
		}
		out[key] = val
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// maxEnv bounds the entries of hello's "env".
const maxEnv = 32

// maxGPUs bounds the GPUs a worker may list; maxGPUText the length of
// each string it says of one.
const (
	maxGPUs    = 64
	maxGPUText = 80
)

// worldSize reads a "world_size": an integer ≥ 1, else 0 (unknown).
func worldSize(v any) int {
	f, ok := v.(float64)
	if n, whole := whole(&f); ok && whole && n >= 1 && n <= 1<<20 {
		return n
	}
	return 0
}

// gpuID reads a GPU id: a string, made printable, at most maxGPUText
// runes; "" when it is none.
func gpuID(v any) string {
	s, _ := v.(string)
	return safetext.Cut(strings.TrimSpace(safetext.Line(s)), maxGPUText)
}

// parseSystem reads evaluate's "system" (a decoded JSON value): nil unless
// it is an object; a number that is missing, of another type, negative or
// not finite is unknown (0); the device is made printable.
func parseSystem(v any) *loop.System {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	s := &loop.System{}
	dev, _ := m["device"].(string)
	s.Device = safetext.Line(dev)
	num := func(k string) float64 {
		f, _ := m[k].(float64)
		if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			return 0
		}
		return f
	}
	s.MemUsed, s.MemReserved, s.MemPeak, s.RSS = int64(num("mem_used")), int64(num("mem_reserved")), int64(num("mem_peak")), int64(num("rss"))
	s.Util, s.CPU, s.ImgS = min(1, num("util")), num("cpu"), num("img_s")
	s.WorldSize = worldSize(m["world_size"])
	gpus, _ := m["gpus"].([]any)
	for _, v := range gpus {
		g, ok := v.(map[string]any)
		if !ok || len(s.GPUs) == maxGPUs {
			continue
		}
		id := gpuID(g["id"])
		if id == "" {
			continue
		}
		gn := func(k string) float64 {
			f, _ := g[k].(float64)
			if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1<<60 {
				return 0
			}
			return f
		}
		ranks, _ := whole(ptr(gn("ranks")))
		s.GPUs = append(s.GPUs, loop.GPU{
			ID: id, Name: gpuID(g["name"]), Ranks: ranks,
			MemUsed: int64(gn("mem_used")), MemReserved: int64(gn("mem_reserved")), MemPeak: int64(gn("mem_peak")), MemTotal: int64(gn("mem_total")),
			Util: min(1, gn("util")),
		})
	}
	return s
}

func ptr(f float64) *float64 { return &f }

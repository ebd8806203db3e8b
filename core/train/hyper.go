package train

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	"selmix/core/gain"
	"selmix/core/metric"
)

// Hyper holds the hyperparameters a researcher may change while a run is
// going; each change is a Control applied at a step boundary.
type Hyper struct {
	Objective metric.Objective
	Policy    gain.Policy
	Form      gain.Form
	S         float64 // inverse temperature of P = softmax(s·G)
	Omega     float64 // soft-min sharpness; 0 = 40 if K ≤ 10, else 20
	Alpha     float64 // coverage target: cov_j ≥ α/K
	Tau       float64 // coverage multiplier temperature
	LambdaMax float64 // largest coverage multiplier
	LR        float64 // head learning rate η; backbone uses η/10
	BetaMin   float64 // β ~ U[BetaMin, 1]
	Refresh   int     // steps between refreshes of G and P
	Batch     int     // pairs per SGD step
}

// DefaultHyper returns the paper's supervised defaults (SPEC §3, §5).
func DefaultHyper() Hyper {
	return Hyper{
		Objective: metric.MinRecall,
		Policy:    gain.SelMix,
		Form:      gain.Paper,
		S:         10,
		Alpha:     0.95,
		Tau:       0.01,
		LambdaMax: 100,
		LR:        3e-3,
		BetaMin:   0.6,
		Refresh:   50,
		Batch:     128,
	}
}

// Params are the objective parameters for K classes.
func (h Hyper) Params(K int) metric.Params {
	return metric.Params{Omega: h.Omega, Alpha: h.Alpha, Tau: h.Tau, LambdaMax: h.LambdaMax}.WithDefaults(K)
}

type hyperKey struct {
	doc string
	set func(h *Hyper, v string) error
}

func floatKey(doc string, field func(*Hyper) *float64, ok func(float64) bool, want string) hyperKey {
	return hyperKey{doc, func(h *Hyper, v string) error {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || !ok(x) {
			return fmt.Errorf("want %s, got %q", want, v)
		}
		*field(h) = x
		return nil
	}}
}

func intKey(doc string, field func(*Hyper) *int, max int) hyperKey {
	return hyperKey{doc, func(h *Hyper, v string) error {
		x, err := strconv.Atoi(v)
		if err != nil || x < 1 || x > max {
			return fmt.Errorf("want an integer in [1, %d], got %q", max, v)
		}
		*field(h) = x
		return nil
	}}
}

func positive(x float64) bool    { return x > 0 }
func nonNegative(x float64) bool { return x >= 0 }

var hyperKeys = map[string]hyperKey{
	"objective": {"objective to optimize", func(h *Hyper, v string) error {
		o, err := metric.ParseObjective(v)
		if err == nil {
			h.Objective = o
		}
		return err
	}},
	"policy": {"mixup policy: selmix|uniform|greedy|none", func(h *Hyper, v string) error {
		p, err := gain.ParsePolicy(v)
		if err == nil {
			h.Policy = p
		}
		return err
	}},
	"form": {"gain form: paper|official", func(h *Hyper, v string) error {
		f, err := gain.ParseForm(v)
		if err == nil {
			h.Form = f
		}
		return err
	}},
	"s":          floatKey("inverse temperature s", func(h *Hyper) *float64 { return &h.S }, nonNegative, "a number ≥ 0"),
	"omega":      floatKey("soft-min sharpness ω (0 = by K)", func(h *Hyper) *float64 { return &h.Omega }, nonNegative, "a number ≥ 0"),
	"alpha":      floatKey("coverage target α", func(h *Hyper) *float64 { return &h.Alpha }, func(x float64) bool { return x >= 0 && x <= 1 }, "a number in [0, 1]"),
	"tau":        floatKey("coverage temperature τ", func(h *Hyper) *float64 { return &h.Tau }, positive, "a number > 0"),
	"lambda-max": floatKey("largest coverage multiplier λ_max", func(h *Hyper) *float64 { return &h.LambdaMax }, nonNegative, "a number ≥ 0"),
	"lr":         floatKey("head learning rate η", func(h *Hyper) *float64 { return &h.LR }, func(x float64) bool { return x > 0 && x < 10 }, "a number in (0, 10)"),
	"beta-min":   floatKey("β ~ U[beta-min, 1]", func(h *Hyper) *float64 { return &h.BetaMin }, func(x float64) bool { return x >= 0 && x <= 1 }, "a number in [0, 1]"),
	"refresh":    intKey("steps between refreshes", func(h *Hyper) *int { return &h.Refresh }, 1_000_000),
	"batch":      intKey("pairs per step", func(h *Hyper) *int { return &h.Batch }, 65536),
}

// HyperKeys lists the keys Set accepts, sorted.
func HyperKeys() []string {
	keys := make([]string, 0, len(hyperKeys))
	for k := range hyperKeys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// HyperDoc describes key, or "" if there is no such key.
func HyperDoc(key string) string { return hyperKeys[key].doc }

// Set parses value into the hyperparameter named key. On error h is
// unchanged and the error names the key.
func (h *Hyper) Set(key, value string) error {
	k, ok := hyperKeys[key]
	if !ok {
		return fmt.Errorf("unknown hyperparameter %q (have %v)", key, HyperKeys())
	}
	if err := k.set(h, value); err != nil {
		return fmt.Errorf("%s: %v", key, err)
	}
	return nil
}

// Validate checks every field as Set would.
func (h Hyper) Validate() error {
	for _, kv := range h.pairs() {
		probe := h
		if err := probe.Set(kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}

// pairs renders h as key/value strings that Set parses back exactly.
func (h Hyper) pairs() [][2]string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	return [][2]string{
		{"objective", string(h.Objective)}, {"policy", string(h.Policy)}, {"form", h.Form.String()},
		{"s", f(h.S)}, {"omega", f(h.Omega)}, {"alpha", f(h.Alpha)}, {"tau", f(h.Tau)},
		{"lambda-max", f(h.LambdaMax)}, {"lr", f(h.LR)}, {"beta-min", f(h.BetaMin)},
		{"refresh", strconv.Itoa(h.Refresh)}, {"batch", strconv.Itoa(h.Batch)},
	}
}

// Get returns the current value of key as Set would accept it.
func (h Hyper) Get(key string) (string, bool) {
	for _, kv := range h.pairs() {
		if kv[0] == key {
			return kv[1], true
		}
	}
	return "", false
}

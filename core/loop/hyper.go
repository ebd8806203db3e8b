package loop

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"selmix/core/gain"
	"selmix/core/metric"
)

// Hyper holds the hyperparameters a researcher may change while a run is
// going; each change is a Control applied at a step boundary. It is the
// [finetune] section of a configuration file (core/experiment embeds it),
// so the TOML keys, the control keys, the workbench's forms and the flags
// of `selmix gain` all come from this one definition: the struct (keys,
// docs), DefaultHyper (defaults) and params (ranges).
type Hyper struct {
	Objective metric.Objective `toml:"objective" json:"objective" doc:"objective to optimize: {objectives} (docs/method.md)"`
	Policy    gain.Policy      `toml:"policy" json:"policy" doc:"fine-tuning policy: {policies} (csst and mislas2 are the paper's baselines; docs/method.md)"`
	Form      gain.Form        `toml:"form" json:"form" doc:"gain form: paper (Theorem 1, at the mixed class centroids) | official (the authors' code) | samples (one head step on mixed samples, D = ∂ψ/∂C^soft; docs/method.md)"`
	Draws     int              `toml:"sample_draws" json:"sample_draws" doc:"form samples: training samples of each class drawn at each refresh, each pair's gain the mean over that many mixes (1–64)"`
	S         float64          `toml:"s" json:"s" doc:"inverse temperature of P = softmax(s·G)"`
	Omega     float64          `toml:"omega" json:"omega" doc:"soft-min sharpness ω; 0 = 40 if K ≤ 10, else 20"`
	Alpha     float64          `toml:"alpha" json:"alpha" doc:"coverage constraint cov_j ≥ α/K"`
	Tau       float64          `toml:"tau" json:"tau" doc:"coverage multiplier temperature τ"`
	LambdaMax float64          `toml:"lambda_max" json:"lambda_max" doc:"largest coverage multiplier λ_max"`
	CovMargin Margin           `toml:"cov_margin" json:"cov_margin" doc:"coverage objectives (@cov, @ht-cov): the multipliers aim at α/K + δ on validation so the bound holds on new data: auto = δ_j from cov_conf and the variance of class j's validation coverage (the built-in default) | δ by hand ≥ 0 (0 = the paper: α/K exactly); ψ and 'k of K met' keep α/K (docs/method.md)"`
	CovConf   float64          `toml:"cov_conf" json:"cov_conf" doc:"confidence in (0, 1) of the one-sided bound on a class's validation coverage (its variance given the validation set's class counts) that sets δ when cov_margin = auto"`
	CovScope  Scope            `toml:"cov_scope" json:"cov_scope" doc:"what cov_margin = auto guarantees at cov_conf: class (each class alone, on validation's sampling error) | all (every class at once, on a test set of the experiment's test size: Bonferroni over the constraints plus the test set's own sampling error; docs/method.md)"`
	Memory    Memory           `toml:"multipliers" json:"multipliers" doc:"coverage multipliers: memoryless (the paper: recomputed from C at each refresh, so they vanish at the aim) | integral (plus a term that accumulates lambda_rate × the shortfall at each refresh, so a class is held at its aim; docs/method.md)"`
	LamRate   float64          `toml:"lambda_rate" json:"lambda_rate" doc:"multipliers = integral: growth of a coverage multiplier's memory per refresh per unit of coverage short of the aim (it shrinks as fast above it; 0 to λ_max)"`
	LR        float64          `toml:"lr" json:"lr" doc:"head learning rate η (the backbone takes η/10), cosine to 0"`
	BetaMin   float64          `toml:"beta_min" json:"beta_min" doc:"β ~ U[beta_min, 1]"`
	Refresh   int              `toml:"refresh" json:"refresh" doc:"steps between refreshes of G and P"`
	Batch     int              `toml:"batch" json:"batch" doc:"pairs per SGD step"`
	GainNorm  gain.Norm        `toml:"gain_norm" json:"gain_norm" doc:"none: P = softmax(s·G) | max: G/max|G| first (|G| ≤ 1 as the paper's analysis assumes)"`
	Adapt     Adapt            `toml:"adapt" json:"adapt" doc:"none (the paper; configs/paper.toml) | refresh | lr (the built-in default): keep each interval's predicted change of ψ where it holds, by a shorter interval or a smaller step (docs/method.md)"`
	LASHead   float64          `toml:"las_head" json:"las_head" doc:"policy mislas2: label smoothing ε_1 of the most frequent class (MiSLAS: 0.3 on CIFAR-10-LT and ImageNet-LT, 0.4 on CIFAR-100-LT)"`
	LASTail   float64          `toml:"las_tail" json:"las_tail" doc:"policy mislas2: label smoothing ε_K of the rarest class (MiSLAS: 0.0 on CIFAR-10-LT and ImageNet-LT, 0.1 on CIFAR-100-LT)"`
}

// DefaultHyper returns the paper's supervised defaults (docs/method.md).
func DefaultHyper() Hyper {
	return Hyper{
		Objective: metric.MinRecall,
		Policy:    gain.SelMix,
		Form:      gain.Paper,
		S:         10,
		Alpha:     0.95,
		Tau:       0.01,
		LambdaMax: 100,
		CovMargin: 0, // the paper aims at α/K; the built-in experiment sets auto
		CovConf:   0.95,
		CovScope:  ScopeClass,
		Memory:    MemoryNone,
		LamRate:   200,
		Draws:     8,
		LR:        3e-3,
		BetaMin:   0.6,
		Refresh:   50,
		Batch:     128,
		GainNorm:  gain.NormNone,
		Adapt:     AdaptNone,
		LASHead:   0.3, // MiSLAS's CIFAR-10-LT values
		LASTail:   0,
	}
}

// Params are the objective parameters for K classes measured on n
// validation samples (the coverage margin needs n; docs/method.md).
func (h Hyper) Params(K, n int) metric.Params { return h.ParamsFor(K, n, 0) }

// ParamsFor is Params where the test set has nTest samples (0: unknown,
// taken as n), which the margin of cov_scope = all covers.
func (h Hyper) ParamsFor(K, n, nTest int) metric.Params {
	p := metric.Params{Omega: h.Omega, Alpha: h.Alpha, Tau: h.Tau, LambdaMax: h.LambdaMax}
	if h.CovMargin == MarginAuto {
		p.Conf, p.N = h.CovConf, n
		if h.CovScope == ScopeAll {
			p.Family, p.NTest = 2, cmp.Or(nTest, n)
			if s, _ := h.Objective.Spec(); s.Constraint == metric.ClassCoverage {
				p.Family = K
			}
		}
	} else {
		p.Margin = float64(h.CovMargin)
	}
	return p.WithDefaults(K)
}

// UnmarshalJSON reads hyperparameters over DefaultHyper, so a record or a
// checkpoint written before a key existed reads as it ran: those keys'
// engine defaults are what ran then (cov_margin 0, the paper's aim).
func (h *Hyper) UnmarshalJSON(b []byte) error {
	type plain Hyper
	d := DefaultHyper()
	if err := json.Unmarshal(b, (*plain)(&d)); err != nil {
		return err
	}
	*h = d
	return nil
}

// param is one hyperparameter: how to read it from text (controls are
// text: they are logged and replayed) and which values are valid.
type param struct {
	key    string // the TOML and control key: the Hyper field's toml tag (set from field)
	alias  string // the control key runs recorded before keys were unified
	label  string // for the workbench's forms
	gain   bool   // a flag of `selmix gain` (it derives G and P; it takes no steps)
	effect effect // what a change does to a run
	addr   func(h *Hyper) any
	parse  func(h *Hyper, v string) error
	check  func(h Hyper) error
}

// effect is what changing a hyperparameter does to a run in progress.
type effect int

const (
	// reshapes: the multipliers, D, G and P are derived again (s, β_min…).
	reshapes effect = iota
	// redefines: ψ becomes another function (the objective or one of its
	// parameters), and is derived again too.
	redefines
	// paces: only the steps change (η, the interval, the batch); G and P
	// stand.
	paces
)

// valueParam is a parameter read from text by read and checked by check;
// the float, integer and named-choice parameters below are all one.
func valueParam[T any](alias, label string, gain bool, eff effect, field func(*Hyper) *T, read func(string) (T, error), check func(T) error) param {
	return param{alias: alias, label: label, gain: gain, effect: eff, addr: func(h *Hyper) any { return field(h) },
		parse: func(h *Hyper, v string) error {
			x, err := read(v)
			if err != nil {
				return err
			}
			if err := check(x); err != nil {
				return err
			}
			*field(h) = x
			return nil
		},
		check: func(h Hyper) error { return check(*field(&h)) },
	}
}

func floatParam(alias, label string, gain bool, eff effect, field func(*Hyper) *float64, ok func(float64) bool, want string) param {
	read := func(v string) (float64, error) {
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return 0, fmt.Errorf("want %s, got %q", want, v)
		}
		return x, nil
	}
	check := func(x float64) error {
		if math.IsNaN(x) || math.IsInf(x, 0) || !ok(x) {
			return fmt.Errorf("want %s, got %v", want, x)
		}
		return nil
	}
	return valueParam(alias, label, gain, eff, field, read, check)
}

func intParam(alias, label string, eff effect, field func(*Hyper) *int, max int) param {
	read := func(v string) (int, error) {
		x, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return 0, fmt.Errorf("want an integer in [1, %d], got %q", max, v)
		}
		return x, nil
	}
	check := func(x int) error {
		if x < 1 || x > max {
			return fmt.Errorf("want an integer in [1, %d], got %d", max, x)
		}
		return nil
	}
	return valueParam(alias, label, false, eff, field, read, check)
}

// choiceParam is a parameter that names one of a set of choices; parse is
// the type's own parser (its error lists them) and name its inverse.
func choiceParam[T any](alias, label string, gain bool, eff effect, field func(*Hyper) *T, parse func(string) (T, error), name func(T) string) param {
	check := func(x T) error { _, err := parse(name(x)); return err }
	return valueParam(alias, label, gain, eff, field, parse, check)
}

func text[T ~string](x T) string { return string(x) }

func positive(x float64) bool    { return x > 0 }
func nonNegative(x float64) bool { return x >= 0 }
func unit(x float64) bool        { return x >= 0 && x <= 1 }

// params are the hyperparameters, each once: its key is its Hyper
// field's toml tag (keyed below), and its effect decides what ChangesPsi,
// Reshapes and the engine do when it changes.
var params = keyed([]param{
	choiceParam("", "objective", true, redefines, func(h *Hyper) *metric.Objective { return &h.Objective }, metric.ParseObjective, text),
	choiceParam("", "policy", true, reshapes, func(h *Hyper) *gain.Policy { return &h.Policy }, gain.ParsePolicy, text),
	choiceParam("", "form", true, reshapes, func(h *Hyper) *gain.Form { return &h.Form }, gain.ParseForm, gain.Form.String),
	intParam("", "draws", reshapes, func(h *Hyper) *int { return &h.Draws }, MaxDraws),
	floatParam("", "s", true, reshapes, func(h *Hyper) *float64 { return &h.S }, nonNegative, "a number ≥ 0"),
	floatParam("", "ω", true, redefines, func(h *Hyper) *float64 { return &h.Omega }, nonNegative, "a number ≥ 0"),
	floatParam("", "α", true, redefines, func(h *Hyper) *float64 { return &h.Alpha }, unit, "a number in [0, 1]"),
	floatParam("", "τ", true, redefines, func(h *Hyper) *float64 { return &h.Tau }, positive, "a number > 0"),
	floatParam("lambda-max", "λ_max", true, redefines, func(h *Hyper) *float64 { return &h.LambdaMax }, nonNegative, "a number ≥ 0"),
	choiceParam("", "δ cov", true, redefines, func(h *Hyper) *Margin { return &h.CovMargin }, ParseMargin, Margin.String),
	floatParam("", "q cov", true, redefines, func(h *Hyper) *float64 { return &h.CovConf }, func(x float64) bool { return x > 0 && x < 1 }, "a confidence in (0, 1)"),
	choiceParam("", "scope", true, redefines, func(h *Hyper) *Scope { return &h.CovScope }, ParseScope, text),
	choiceParam("", "λ memory", true, redefines, func(h *Hyper) *Memory { return &h.Memory }, ParseMemory, text),
	floatParam("", "λ rate", true, redefines, func(h *Hyper) *float64 { return &h.LamRate }, nonNegative, "a number ≥ 0"),
	floatParam("", "η", false, paces, func(h *Hyper) *float64 { return &h.LR }, func(x float64) bool { return x > 0 && x < 10 }, "a number in (0, 10)"),
	floatParam("beta-min", "β_min", true, reshapes, func(h *Hyper) *float64 { return &h.BetaMin }, unit, "a number in [0, 1]"),
	intParam("", "refresh", paces, func(h *Hyper) *int { return &h.Refresh }, 1_000_000),
	intParam("", "batch", paces, func(h *Hyper) *int { return &h.Batch }, 65536),
	choiceParam("", "G norm", true, reshapes, func(h *Hyper) *gain.Norm { return &h.GainNorm }, gain.ParseNorm, text),
	choiceParam("", "adapt", false, reshapes, func(h *Hyper) *Adapt { return &h.Adapt }, ParseAdapt, text),
	floatParam("", "ε_head", false, reshapes, func(h *Hyper) *float64 { return &h.LASHead }, unit, "a number in [0, 1]"),
	floatParam("", "ε_tail", false, reshapes, func(h *Hyper) *float64 { return &h.LASTail }, unit, "a number in [0, 1]"),
})

// keyed sets each parameter's key to the toml tag of the Hyper field its
// accessor points at, so the struct is the one list of the keys.
func keyed(ps []param) []param {
	var h Hyper
	v := reflect.ValueOf(&h).Elem()
	for i := range ps {
		at := reflect.ValueOf(ps[i].addr(&h)).Pointer()
		for f := range v.NumField() {
			if v.Field(f).Addr().Pointer() == at {
				ps[i].key = v.Type().Field(f).Tag.Get("toml")
			}
		}
		if ps[i].key == "" {
			panic(fmt.Sprintf("hyperparameter %q points at no Hyper field with a toml key", ps[i].label))
		}
	}
	return ps
}

// lookup finds a parameter by key or by its old control key.
func lookup(key string) (param, bool) {
	for _, p := range params {
		if p.key == key || (p.alias != "" && p.alias == key) {
			return p, true
		}
	}
	return param{}, false
}

// Canonical is key's current name (aliases map to it), or key itself.
func Canonical(key string) string {
	if p, ok := lookup(key); ok {
		return p.key
	}
	return key
}

// ChangesPsi reports whether setting key (or its alias) makes ψ another
// function: the objective or a parameter of it. The change of ψ over the
// interval in progress then compares nothing and is not predicted
// (docs/method.md). The engine and the workbench both ask here.
func ChangesPsi(key string) bool {
	p, ok := lookup(key)
	return ok && p.effect == redefines
}

// Reshapes reports whether setting key (or its alias) changes what a
// refresh derives from its statistics (the multipliers, D, G, P): every
// key but those that only pace the steps (lr, refresh, batch), whose
// change leaves G and P standing.
func Reshapes(key string) bool {
	p, ok := lookup(key)
	return ok && p.effect != paces
}

// HyperKeys lists the keys Set accepts (aliases aside), sorted.
func HyperKeys() []string {
	keys := make([]string, 0, len(params))
	for _, p := range params {
		keys = append(keys, p.key)
	}
	sort.Strings(keys)
	return keys
}

// HyperDoc describes key, or "" if there is no such key.
func HyperDoc(key string) string {
	p, ok := lookup(key)
	if !ok {
		return ""
	}
	return docs[p.key]
}

// HyperLabel is key's short name for the workbench ("ω" for omega).
func HyperLabel(key string) string {
	p, _ := lookup(key)
	return p.label
}

// GainKeys lists, in definition order, the keys `selmix gain` takes as
// flags: those that decide G and P.
func GainKeys() []string {
	var out []string
	for _, p := range params {
		if p.gain {
			out = append(out, p.key)
		}
	}
	return out
}

// docs and fields are the Hyper fields' doc tags and indices by toml key.
var docs, fields = func() (map[string]string, map[string]int) {
	d, f := map[string]string{}, map[string]int{}
	t := reflect.TypeOf(Hyper{})
	names := make([]string, 0, len(metric.Objectives()))
	for _, o := range metric.Objectives() {
		names = append(names, string(o))
	}
	var pols []string
	for _, p := range gain.Policies() {
		pols = append(pols, string(p))
	}
	for i := range t.NumField() {
		key := t.Field(i).Tag.Get("toml")
		doc := strings.ReplaceAll(t.Field(i).Tag.Get("doc"), "{objectives}", strings.Join(names, " | "))
		d[key] = strings.ReplaceAll(doc, "{policies}", strings.Join(pols, " | "))
		f[key] = i
	}
	return d, f
}()

// Set parses value into the hyperparameter named key (or its old control
// key). On error h is unchanged and the error names the key.
func (h *Hyper) Set(key, value string) error {
	p, ok := lookup(key)
	if !ok {
		return fmt.Errorf("unknown hyperparameter %q (have %v)", key, HyperKeys())
	}
	probe := *h
	if err := p.parse(&probe, value); err != nil {
		return fmt.Errorf("%s: %v", p.key, err)
	}
	*h = probe
	return nil
}

// Validate checks every field, typed, and names the first bad one, then
// the fields together (Consistent).
func (h Hyper) Validate() error {
	for _, p := range params {
		if err := p.check(h); err != nil {
			return fmt.Errorf("%s: %v", p.key, err)
		}
	}
	return h.Consistent()
}

// Consistent checks what no field can alone: policy csst with an objective
// that is not linear in the recalls is refused.
func (h Hyper) Consistent() error {
	if h.Policy == gain.CSST {
		if err := CheckLinear(gain.CSST, h.Objective); err != nil {
			return fmt.Errorf("policy: %v", err)
		}
	}
	return nil
}

// Get returns the current value of key as Set would accept it.
func (h Hyper) Get(key string) (string, bool) {
	p, ok := lookup(key)
	if !ok {
		return "", false
	}
	v := reflect.ValueOf(h).Field(fields[p.key])
	if s, ok := v.Interface().(fmt.Stringer); ok {
		return s.String(), true // gain.Form
	}
	switch v.Kind() {
	case reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64), true
	case reflect.Int:
		return strconv.Itoa(int(v.Int())), true
	}
	return v.String(), true // the string types: objective, policy
}

// CheckLinear refuses the objectives CSST cannot optimise: its consistent
// loss is for metrics linear in C (after the Lagrangian relaxation of the
// constraints), and a G-mean or H-mean of recalls is not.
func CheckLinear(what gain.Policy, obj metric.Objective) error {
	s, ok := obj.Spec()
	if ok && !s.Linear() {
		return fmt.Errorf("%s optimises objectives linear in the recalls; %s is not (docs/method.md, \"Baselines\")", what, obj)
	}
	return nil
}

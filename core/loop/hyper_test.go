package loop

import (
	"encoding/json"
	"strings"
	"testing"

	"selmix/core/gain"
	"selmix/core/metric"
)

func TestHyperSetGetRoundTrip(t *testing.T) {
	h := DefaultHyper()
	if err := h.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	sets := map[string]string{
		"objective": "hmean@cov", "policy": "greedy", "form": "official", "s": "2.5", "omega": "30",
		"alpha": "0.9", "tau": "0.05", "lambda_max": "50", "lr": "0.01", "beta_min": "0.7",
		"refresh": "25", "batch": "64", "gain_norm": "max", "adapt": "lr", "las_head": "0.4", "las_tail": "0.1",
		"cov_margin": "auto", "cov_conf": "0.9", "sample_draws": "4", "multipliers": "integral", "lambda_rate": "500", "cov_scope": "all",
	}
	if len(sets) != len(HyperKeys()) {
		t.Fatalf("test covers %d keys, Hyper has %d", len(sets), len(HyperKeys()))
	}
	for k, v := range sets {
		if err := h.Set(k, v); err != nil {
			t.Fatalf("Set(%s, %s): %v", k, v, err)
		}
		if got, _ := h.Get(k); got != v {
			t.Errorf("Get(%s) = %s, want %s", k, got, v)
		}
	}
	if h.S != 2.5 || h.Refresh != 25 || h.LambdaMax != 50 || h.Objective != "hmean@cov" {
		t.Errorf("fields not set: %+v", h)
	}
}

func TestHyperSetErrors(t *testing.T) {
	cases := []struct{ key, val, want string }{
		{"nope", "1", `unknown hyperparameter "nope"`},
		{"s", "-1", "s: want a number ≥ 0"},
		{"s", "NaN", "s: want a number ≥ 0"},
		{"alpha", "1.5", "alpha: want a number in [0, 1]"},
		{"tau", "0", "tau: want a number > 0"},
		{"refresh", "0", "refresh: want an integer in [1, 1000000]"},
		{"batch", "x", "batch: want an integer"},
		{"objective", "best", "objective:"},
		{"policy", "random", "policy:"},
		{"form", "sample", "form: gain: unknown gain form"},
		{"sample_draws", "0", "sample_draws: want an integer in [1, 64]"},
		{"sample_draws", "65", "sample_draws: want an integer in [1, 64]"},
		{"multipliers", "pid", "multipliers: unknown multipliers"},
		{"lambda_rate", "-1", "lambda_rate: want a number ≥ 0"},
	}
	for _, c := range cases {
		h := DefaultHyper()
		before := h
		err := h.Set(c.key, c.val)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Set(%s, %s) = %v, want error containing %q", c.key, c.val, err, c.want)
		}
		if h != before {
			t.Errorf("Set(%s, %s) changed h on error", c.key, c.val)
		}
	}
}

// Runs recorded before the keys were unified logged "lambda-max" and
// "beta-min"; they still replay.
func TestHyperOldControlKeys(t *testing.T) {
	h := DefaultHyper()
	if err := h.Set("lambda-max", "7"); err != nil || h.LambdaMax != 7 {
		t.Errorf("Set(lambda-max, 7): %v, λ_max %v", err, h.LambdaMax)
	}
	if err := h.Set("beta-min", "0.5"); err != nil || h.BetaMin != 0.5 {
		t.Errorf("Set(beta-min, 0.5): %v, β_min %v", err, h.BetaMin)
	}
}

// Every Hyper field is a parameter with a toml key, a doc and a label,
// and Validate checks each field without going through text.
func TestHyperDefinitionComplete(t *testing.T) {
	if len(params) != len(fields) {
		t.Fatalf("%d parameters for %d Hyper fields", len(params), len(fields))
	}
	for _, p := range params {
		if _, ok := fields[p.key]; !ok || HyperDoc(p.key) == "" || p.label == "" {
			t.Errorf("parameter %q: field %v, doc %q, label %q", p.key, ok, HyperDoc(p.key), p.label)
		}
	}
	bad := DefaultHyper()
	bad.Alpha = 2
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "alpha") {
		t.Errorf("Validate with α = 2: %v", err)
	}
	bad = DefaultHyper()
	bad.Batch = 0
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "batch") {
		t.Errorf("Validate with batch 0: %v", err)
	}
}

// csst is refused with an objective that is not linear in the recalls, by
// Validate (configuration) and by Consistent (the engine's controls).
func TestHyperCSSTNeedsLinearObjective(t *testing.T) {
	for _, s := range metric.Specs() {
		h := DefaultHyper()
		h.Policy, h.Objective = gain.CSST, s.Name
		err := h.Validate()
		if s.Linear() && err != nil {
			t.Errorf("csst with %s: %v", s.Name, err)
		}
		if !s.Linear() && (err == nil || !strings.Contains(err.Error(), "policy: csst optimises objectives linear in the recalls; "+string(s.Name)+" is not")) {
			t.Errorf("csst with %s: %v, want a refusal", s.Name, err)
		}
		h.Policy = gain.MiSLAS2
		if err := h.Validate(); err != nil {
			t.Errorf("mislas2 with %s: %v", s.Name, err)
		}
	}
}

// ChangesPsi knows each key by its name and its alias, and only the keys
// that make ψ another function.
func TestChangesPsi(t *testing.T) {
	for _, k := range []string{"objective", "omega", "alpha", "tau", "lambda_max", "lambda-max", "cov_margin", "cov_conf"} {
		if !ChangesPsi(k) {
			t.Errorf("ChangesPsi(%q) = false, want true", k)
		}
	}
	for _, k := range []string{"s", "lr", "policy", "refresh", "batch", "beta_min", "beta-min", "gain_norm", "adapt", "form", "bogus"} {
		if ChangesPsi(k) {
			t.Errorf("ChangesPsi(%q) = true, want false", k)
		}
	}
}

// The coverage margin's keys: auto or a number ≥ 0, a confidence in
// (0, 1); a bad value is refused naming the key, and Params carries the
// margin the engine's metric needs (auto: the confidence and n).
func TestCovMarginKeys(t *testing.T) {
	for _, tc := range []struct{ key, val string }{
		{"cov_margin", "-0.01"}, {"cov_margin", "often"}, {"cov_margin", "NaN"}, {"cov_margin", "Inf"},
		{"cov_conf", "0"}, {"cov_conf", "1"}, {"cov_conf", "-0.5"}, {"cov_conf", "1.5"},
	} {
		h := DefaultHyper()
		err := h.Set(tc.key, tc.val)
		if err == nil || !strings.HasPrefix(err.Error(), tc.key+": ") {
			t.Errorf("Set(%s, %s) = %v, want an error naming %s", tc.key, tc.val, err, tc.key)
		}
		if h != DefaultHyper() {
			t.Errorf("Set(%s, %s) changed h on error", tc.key, tc.val)
		}
	}
	h := DefaultHyper()
	if h.CovMargin != 0 {
		t.Errorf("the engine's default cov_margin = %v, want 0 (the paper)", h.CovMargin)
	}
	if p := h.Params(10, 5000); p.Conf != 0 || p.Margin != 0 {
		t.Errorf("Params with cov_margin 0: %+v, want no margin", p)
	}
	h.CovMargin = 0.004
	if p := h.Params(10, 5000); p.Conf != 0 || p.Margin != 0.004 {
		t.Errorf("Params with cov_margin 0.004: %+v", p)
	}
	h.CovMargin, h.CovConf = MarginAuto, 0.9
	if p := h.Params(10, 5000); p.Conf != 0.9 || p.N != 5000 || p.Margin != 0 {
		t.Errorf("Params with cov_margin auto: %+v, want Conf 0.9 and N 5000", p)
	}
	// JSON (records, checkpoints) says "auto" and reads absent keys as the
	// engine's defaults: what ran before the key existed.
	b, err := json.Marshal(h)
	if err != nil || !strings.Contains(string(b), `"cov_margin":"auto"`) {
		t.Errorf("json %s, %v: want cov_margin \"auto\"", b, err)
	}
	var back Hyper
	if err := json.Unmarshal(b, &back); err != nil || back != h {
		t.Errorf("round trip %+v, %v; want %+v", back, err, h)
	}
	var old Hyper
	if err := json.Unmarshal([]byte(`{"objective":"mean-recall@cov","s":5}`), &old); err != nil {
		t.Fatal(err)
	}
	want := DefaultHyper()
	want.Objective, want.S = metric.MeanRecallCov, 5
	if old != want {
		t.Errorf("a record without the new keys reads %+v, want the defaults %+v", old, want)
	}
}

// TestMethod: the paper's method says nothing; each departure is named,
// and only where it acts (memory and scope on a coverage objective).
func TestMethod(t *testing.T) {
	h := DefaultHyper()
	if m := h.Method(); m != "" {
		t.Fatalf("the paper's method: %q, want nothing", m)
	}
	h.Form, h.Memory, h.CovMargin, h.CovScope = gain.Samples, MemoryIntegral, MarginAuto, ScopeAll
	if m := h.Method(); m != "samples gain" {
		t.Fatalf("min-recall with the samples form: %q", m)
	}
	h.Objective = metric.MeanRecallCov
	if m := h.Method(); m != "samples gain · λ integral · δ for all classes" {
		t.Fatalf("mean-recall@cov: %q", m)
	}
	h.Policy = gain.CSST
	if m := h.Method(); m != "λ integral · δ for all classes" {
		t.Fatalf("csst draws no pairs, so no gain form: %q", m)
	}
}

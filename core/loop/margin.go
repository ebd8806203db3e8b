package loop

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"selmix/core/gain"
	"selmix/core/metric"
)

// Margin is finetune.cov_margin: how far above the coverage bound α/K the
// coverage multipliers aim on validation (docs/method.md, "The coverage
// margin"). MarginAuto derives it from finetune.cov_conf and the
// validation size; a number ≥ 0 sets δ by hand, 0 being the paper's aim.
type Margin float64

// MarginAuto is, for each constraint, the margin of a one-sided bound at
// cov_conf on its validation coverage (metric.CoverageMargin).
const MarginAuto Margin = -1

// ParseMargin reads "auto" or a number ≥ 0.
func ParseMargin(s string) (Margin, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "auto") {
		return MarginAuto, nil
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
		return 0, fmt.Errorf("want auto or a number ≥ 0, got %q", s)
	}
	return Margin(x), nil
}

// String is "auto" or the number.
func (m Margin) String() string {
	if m == MarginAuto {
		return "auto"
	}
	return strconv.FormatFloat(float64(m), 'g', -1, 64)
}

// MarshalText writes the margin as ParseMargin reads it, so a
// configuration file and a run's records say "auto" or the number.
func (m Margin) MarshalText() ([]byte, error) {
	if m != MarginAuto && !(m >= 0 && !math.IsInf(float64(m), 0)) {
		return nil, fmt.Errorf("cov_margin %v: want auto or a number ≥ 0", float64(m))
	}
	return []byte(m.String()), nil
}

// UnmarshalText reads a margin (see ParseMargin).
func (m *Margin) UnmarshalText(b []byte) error {
	v, err := ParseMargin(string(b))
	if err == nil {
		*m = v
	}
	return err
}

// Aimed reports whether the ψ the engine optimizes for obj with margin m
// in force (Refresh.Psi, the ψ the best checkpoint is judged on) is aimed
// at α/K + δ rather than at the bound α/K: obj has a coverage constraint
// and m is not 0. That ψ is then not obj's reported ψ (Refresh.Objectives,
// a summary's test columns; metric.Values) but a stricter one, and every
// view names it PsiLabel(true) (docs/method.md, "The coverage margin").
func Aimed(obj metric.Objective, m Margin) bool {
	s, ok := obj.Spec()
	return ok && s.Constraint != metric.NoConstraint && m != 0
}

// Aimed is Aimed of h's objective and margin. The multipliers' memory
// does not make ψ aimed: it steers D and G, ψ stays the memoryless one.
func (h Hyper) Aimed() bool { return Aimed(h.Objective, h.CovMargin) }

// Memory is finetune.multipliers: whether the coverage multipliers
// remember past refreshes (docs/method.md, "Multipliers that reach the
// aim").
type Memory string

const (
	// MemoryNone is the paper's: each refresh recomputes them from C.
	MemoryNone Memory = "memoryless"
	// MemoryIntegral adds to each an integral term (metric.Integrate).
	MemoryIntegral Memory = "integral"
)

// ParseMemory reads memoryless or integral.
func ParseMemory(s string) (Memory, error) {
	return parseChoice(s, "multipliers", MemoryNone, MemoryIntegral)
}

// parseChoice reads one of two choices; what names the kind in its error.
func parseChoice[T ~string](s, what string, a, b T) (T, error) {
	if v := T(strings.TrimSpace(s)); v == a || v == b {
		return v, nil
	}
	return "", fmt.Errorf("unknown %s %q (want %s or %s)", what, s, a, b)
}

// MaxDraws bounds finetune.sample_draws: each draw is three K×K×K
// products at every refresh.
const MaxDraws = 64

// PsiLabel names the optimized ψ: "ψ aimed" where it is aimed at α/K + δ
// (Aimed), else "ψ", since it is then the reported ψ.
func PsiLabel(aimed bool) string {
	if aimed {
		return "ψ aimed"
	}
	return "ψ"
}

// Scope is finetune.cov_scope: what the automatic coverage margin
// guarantees (docs/method.md, "The coverage guarantee").
type Scope string

const (
	// ScopeClass: each class's validation coverage alone, at cov_conf.
	ScopeClass Scope = "class"
	// ScopeAll: every constraint at once on a test set, at cov_conf.
	ScopeAll Scope = "all"
)

// ParseScope reads class or all.
func ParseScope(s string) (Scope, error) { return parseChoice(s, "scope", ScopeClass, ScopeAll) }

// Method says, in a few words, where h's method is not the paper's: the
// gain form, the multipliers' memory and the guarantee the margin gives
// ("samples gain · λ integral · δ for all classes"; "" where all three
// are the paper's). The header, runs show and run.json show it.
func (h Hyper) Method() string {
	var parts []string
	if h.Policy.DrawsPairs() && h.Form != gain.Paper {
		parts = append(parts, h.Form.String()+" gain")
	}
	if s, _ := h.Objective.Spec(); s.Constraint != metric.NoConstraint {
		if h.Memory == MemoryIntegral {
			parts = append(parts, "λ integral")
		}
		if h.CovMargin == MarginAuto && h.CovScope == ScopeAll {
			parts = append(parts, "δ for all classes")
		}
	}
	return strings.Join(parts, " · ")
}

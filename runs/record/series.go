package record

import (
	"slices"

	"selmix/core/loop"
	"selmix/core/metric"
)

// Series is one per-refresh series of a run: the one catalogue of them
// (AllSeries, Vectors) that the exports (CSV, Parquet, TensorBoard tags,
// runs compare), the figures and the comparison view share, as
// metric.Scalars is for the reported metrics of one evaluation. A series
// is named here and nowhere else, and read from a refresh by its Get.
type Series struct {
	// Key is its one name: the run format's (docs/run-format.md,
	// "Exports"), the exports' metric and tag.
	Key string
	// Label is how the comparison view, runs compare and the figures
	// show it: "ψ <objective>", "Δψ predicted"; a reported metric's is
	// its metric.Scalar Key, as the comparison view names it.
	Label string
	// Figure is its name in the figures' CSVs (docs/run-format.md,
	// "Figures' CSVs") and for export --metric, kept as those files have
	// always written it: "psi:<objective>" for an objective's ψ, a
	// reported metric's key, "predicted" and "realised" for Δψ.
	Figure string
	// Objective is the objective whose ψ it is, "" if none.
	Objective metric.Objective
	// Scalar is the reported metric it is (its title, unit and reader
	// of a report), nil if none.
	Scalar *metric.Scalar
	// Get reads it from a refresh; ok is false where the refresh does
	// not record it (the loss before the first step, Δψ without a
	// prediction, the head and tail multipliers of an objective without
	// them, ψ of an objective added after the run was recorded).
	Get func(rf *RefreshEvent) (v float64, ok bool)
}

// Value is s at rf, NaN where rf does not record it.
func (s Series) Value(rf *RefreshEvent) float64 {
	if v, ok := s.Get(rf); ok {
		return v
	}
	return nan
}

// Vector is a per-class series of a refresh: a value per class (the
// exports' per-class metrics).
type Vector struct {
	Key   string // the run format's name, as Series.Key
	Label string
	// Get reads it from a refresh; nil where the refresh records none.
	Get func(rf *RefreshEvent) []float64
}

// Keys of the series (docs/run-format.md, "Exports"). The objectives'
// and reported metrics' keys are ObjectiveSeries(o).Key and
// ReportSeries(m).Key.
const (
	KeyPsi        = "psi"                 // ψ of the optimized objective, with its multipliers
	KeyS          = "s"                   // the inverse temperature P was computed with
	KeyLoss       = "loss"                // the last training loss
	KeyPredicted  = "delta_psi/predicted" // Δψ over the interval the refresh closes, as G·P predicted it
	KeyRealised   = "delta_psi/realised"  // and as it happened
	KeyLambdaHead = "lambda/head"         // the head and tail multipliers of the head/tail objectives
	KeyLambdaTail = "lambda/tail"
	KeyRecall     = "recall"   // per class
	KeyCoverage   = "coverage" // per class
	KeyLambda     = "lambda"   // per class: the per-class Lagrange multipliers
)

// The prefixes of the keys of the objectives' ψ and of the reported
// metrics ("objectives/min-recall", "metrics/mean_recall"), and of the
// objectives' ψ in the figures ("psi:min-recall").
const (
	objectiveKey    = "objectives/"
	metricKey       = "metrics/"
	objectiveFigure = "psi:"
)

// ObjectiveSeries is ψ of objective o at each refresh. o need not be one
// this selmix knows (a run recorded by another): then no refresh has it.
func ObjectiveSeries(o metric.Objective) Series {
	i := o.Index()
	return Series{Key: objectiveKey + string(o), Label: "ψ " + string(o), Figure: objectiveFigure + string(o), Objective: o,
		Get: func(rf *RefreshEvent) (float64, bool) {
			if i < 0 || i >= len(rf.Stats.Objectives) {
				return nan, false
			}
			return rf.Stats.Objectives[i], true
		}}
}

// ReportSeries is the reported metric m at each refresh.
func ReportSeries(m metric.Scalar) Series {
	return Series{Key: metricKey + m.Key, Label: m.Key, Figure: m.Key, Scalar: &m,
		Get: func(rf *RefreshEvent) (float64, bool) { return m.Get(&rf.Stats.Report), true }}
}

// catalogue is AllSeries, built once.
var catalogue = buildCatalogue()

func buildCatalogue() []Series {
	plain := func(key, label, figure string, get func(rf *RefreshEvent) (float64, bool)) Series {
		return Series{Key: key, Label: label, Figure: figure, Get: get}
	}
	always := func(f func(rf *RefreshEvent) float64) func(rf *RefreshEvent) (float64, bool) {
		return func(rf *RefreshEvent) (float64, bool) { return f(rf), true }
	}
	delta := func(realised bool) func(rf *RefreshEvent) (float64, bool) {
		return func(rf *RefreshEvent) (float64, bool) {
			st := &rf.Stats
			if st.Predicted == nil || st.Realised == nil {
				return nan, false
			}
			if realised {
				return *st.Realised, true
			}
			return *st.Predicted, true
		}
	}
	headTailAt := func(j int) func(rf *RefreshEvent) (float64, bool) {
		return func(rf *RefreshEvent) (float64, bool) {
			if !HeadTail(rf) {
				return nan, false
			}
			return rf.Stats.Lambda[j], true
		}
	}
	out := []Series{plain(KeyPsi, loop.PsiLabel(false), KeyPsi, always(func(rf *RefreshEvent) float64 { return rf.Stats.Psi }))}
	for _, o := range metric.Objectives() {
		out = append(out, ObjectiveSeries(o))
	}
	for _, m := range metric.Scalars() {
		out = append(out, ReportSeries(m))
	}
	return append(out,
		plain(KeyS, "s", KeyS, always(func(rf *RefreshEvent) float64 { return rf.Stats.S })),
		plain(KeyLoss, "loss", KeyLoss, func(rf *RefreshEvent) (float64, bool) {
			if rf.Loss == nil {
				return nan, false
			}
			return *rf.Loss, true
		}),
		plain(KeyPredicted, "Δψ predicted", "predicted", delta(false)),
		plain(KeyRealised, "Δψ realised", "realised", delta(true)),
		plain(KeyLambdaHead, "λ head", KeyLambdaHead, headTailAt(0)),
		plain(KeyLambdaTail, "λ tail", KeyLambdaTail, headTailAt(1)),
	)
}

// AllSeries are the scalar series of a refresh, in the run format's
// order: ψ, every objective's ψ (metric.Objectives), every reported
// metric (metric.Scalars), s, the loss, Δψ predicted and realised, and
// the head and tail multipliers.
func AllSeries() []Series { return slices.Clone(catalogue) }

// Vectors are the per-class series of a refresh, in the run format's
// order: recall, coverage and the per-class multipliers.
func Vectors() []Vector {
	return []Vector{
		{KeyRecall, "recall", func(rf *RefreshEvent) []float64 { return rf.Stats.Report.Recall }},
		{KeyCoverage, "coverage", func(rf *RefreshEvent) []float64 { return rf.Stats.Report.Coverage }},
		{KeyLambda, "λ", func(rf *RefreshEvent) []float64 {
			if len(rf.Stats.Lambda) == 0 || HeadTail(rf) {
				return nil
			}
			return rf.Stats.Lambda
		}},
	}
}

// HeadTail reports whether a refresh's multipliers are a head and a tail
// one (lambda/head, lambda/tail) rather than one per class (lambda).
func HeadTail(rf *RefreshEvent) bool {
	if len(rf.Stats.Lambda) != 2 {
		return false
	}
	s, ok := rf.Hyper.Objective.Spec()
	if !ok {
		return rf.Stats.K != 2 // an objective this selmix does not know: go by the count
	}
	return s.Aggregate == metric.AggSoftMinHT || s.Constraint == metric.GroupCoverage
}

// LookupSeries finds the series named name: its Key, its Figure name
// ("psi:min-recall", which export --metric has always taken), its Label
// ("ψ min-recall"), or a reported metric's key or old name
// (metric.LookupScalar).
func LookupSeries(name string) (Series, bool) {
	for _, field := range []func(Series) string{
		func(s Series) string { return s.Key },
		func(s Series) string { return s.Figure },
		func(s Series) string { return s.Label },
	} {
		for _, s := range catalogue {
			if field(s) == name {
				return s, true
			}
		}
	}
	if m, ok := metric.LookupScalar(name); ok {
		return ReportSeries(m), true
	}
	return Series{}, false
}

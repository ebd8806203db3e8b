package record

import (
	"encoding/json"
	"fmt"
	"math"

	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/internal/jsonfloat"
	"selmix/runs"
)

// This file is the on-disk schema of format 2 (docs/run-format.md): every
// event payload and summary.json, with explicit snake_case keys. It is
// decoupled from the engine's in-memory types on purpose: those may change
// shape without changing what is on disk, and the conversions below are
// the only place that knows both.

// Num is jsonfloat.Float, the one JSON encoding of a float64: NaN and
// ±Inf as the strings "NaN", "+Inf" and "-Inf".
type Num = jsonfloat.Float

func nums(v []float64) []Num   { return convert[Num](v) }
func floats(v []Num) []float64 { return convert[float64](v) }

// convert copies v into a slice of another float type; nil stays nil.
func convert[U, T ~float64](v []T) []U {
	if v == nil {
		return nil
	}
	out := make([]U, len(v))
	for i, x := range v {
		out[i] = U(x)
	}
	return out
}

// HyperData is loop.Hyper on disk. Readers ignore keys they do not know,
// so a run written by a newer selmix still opens.
type HyperData struct{ loop.Hyper }

// UnmarshalJSON reads a record's hyperparameters over the defaults, so a
// record written before a hyperparameter existed reads as it ran.
func (d *HyperData) UnmarshalJSON(b []byte) error {
	type plain loop.Hyper
	h := loop.DefaultHyper()
	if err := json.Unmarshal(b, (*plain)(&h)); err != nil {
		return err
	}
	d.Hyper = h
	return nil
}

func hyperData(h loop.Hyper) HyperData { return HyperData{h} }

// hyper converts back. Objective and policy names are kept as written (a
// viewer shows what was recorded); a gain form must be one this selmix
// knows, since the engine's type cannot hold another (UnmarshalJSON has
// refused it).
func (d HyperData) hyper() (loop.Hyper, error) { return d.Hyper, nil }

// ReportData is metric.Report on disk. The per-class vectors are written
// in summaries only; refresh events keep theirs in arrays.bin.
type ReportData struct {
	K             int   `json:"k"`
	MeanRecall    Num   `json:"mean_recall"`
	MinRecall     Num   `json:"min_recall"`
	HMean         Num   `json:"hmean"`
	GMean         Num   `json:"gmean"`
	MinCoverage   Num   `json:"min_coverage"`
	Accuracy      Num   `json:"accuracy"`
	HeadRecall    Num   `json:"head_recall"`
	TailRecall    Num   `json:"tail_recall"`
	MinHTRecall   Num   `json:"min_ht_recall"`
	HeadCoverage  Num   `json:"head_coverage"`
	TailCoverage  Num   `json:"tail_coverage"`
	MinHTCoverage Num   `json:"min_ht_coverage"`
	Worst         int   `json:"worst"`
	Prior         []Num `json:"prior,omitempty"`
	Recall        []Num `json:"recall,omitempty"`
	Coverage      []Num `json:"coverage,omitempty"`
}

func reportData(r metric.Report, vectors bool) ReportData {
	d := ReportData{
		K: r.K, MeanRecall: Num(r.MeanRecall), MinRecall: Num(r.MinRecall), HMean: Num(r.HMean), GMean: Num(r.GMean),
		MinCoverage: Num(r.MinCoverage), Accuracy: Num(r.Accuracy),
		HeadRecall: Num(r.HeadRecall), TailRecall: Num(r.TailRecall), MinHTRecall: Num(r.MinHTRecall),
		HeadCoverage: Num(r.HeadCoverage), TailCoverage: Num(r.TailCoverage), MinHTCoverage: Num(r.MinHTCoverage),
		Worst: r.Worst,
	}
	if vectors {
		d.Prior, d.Recall, d.Coverage = nums(r.Prior), nums(r.Recall), nums(r.Coverage)
	}
	return d
}

func (d ReportData) report() metric.Report {
	return metric.Report{
		K: d.K, Prior: floats(d.Prior), Recall: floats(d.Recall), Coverage: floats(d.Coverage),
		MeanRecall: float64(d.MeanRecall), MinRecall: float64(d.MinRecall), HMean: float64(d.HMean), GMean: float64(d.GMean),
		MinCoverage: float64(d.MinCoverage), Accuracy: float64(d.Accuracy),
		HeadRecall: float64(d.HeadRecall), TailRecall: float64(d.TailRecall), MinHTRecall: float64(d.MinHTRecall),
		HeadCoverage: float64(d.HeadCoverage), TailCoverage: float64(d.TailCoverage), MinHTCoverage: float64(d.MinHTCoverage),
		Worst: d.Worst,
	}
}

// Objectives holds ψ of each objective keyed by its name, so adding an
// objective never relabels the values of runs already recorded.
type Objectives map[string]Num

// objectivesOf keys vals, given in metric.Objectives() order.
func objectivesOf(vals []float64) Objectives {
	if vals == nil {
		return nil
	}
	out := Objectives{}
	for i, o := range metric.Objectives() {
		if i < len(vals) {
			out[string(o)] = Num(vals[i])
		}
	}
	return out
}

// values lists o in metric.Objectives() order; an objective the run did
// not record is NaN. nil stays nil.
func (o Objectives) values() []float64 {
	if o == nil {
		return nil
	}
	objs := metric.Objectives()
	out := make([]float64, len(objs))
	for i, name := range objs {
		out[i] = math.NaN()
		if v, ok := o[string(name)]; ok {
			out[i] = float64(v)
		}
	}
	return out
}

// RefreshData is the record of one refresh on every wire: the payload of
// a refresh event (every scalar of one evaluation; its per-class vectors
// and the matrices G and P are records of arrays.bin, see the Array names
// below), each refresh of `selmix runs show --json`, and a snapshot's
// refresh on the control socket, which carries the vectors and matrices
// inline (InlineRefresh).
type RefreshData struct {
	Step  int       `json:"step"`
	Total int       `json:"total"`
	State string    `json:"state"`
	Hyper HyperData `json:"hyper"`
	// Loss is the last training loss; absent before the first step.
	Loss       *Num       `json:"loss,omitempty"`
	K          int        `json:"k"`
	S          Num        `json:"s"`
	Psi        Num        `json:"psi"`
	Objectives Objectives `json:"objectives"`
	Report     ReportData `json:"report"`
	// The change of ψ over the interval this refresh closes, as the
	// previous refresh's G and P predicted it and as it happened
	// (docs/method.md); absent where there is no prediction.
	Predicted *Num `json:"predicted,omitempty"`
	Realised  *Num `json:"realised,omitempty"`
	// Inline: set on the control socket only (InlineRefresh); the log
	// keeps these in arrays.bin. Lambda is the objective's multipliers;
	// G and P, sent to a client that asked for them, are base64 of their
	// little-endian float32 values, row-major.
	Lambda []Num  `json:"lambda,omitempty"`
	Aims   []Num  `json:"aims,omitempty"`
	G      string `json:"g,omitempty"`
	P      string `json:"p,omitempty"`
}

// Names of the arrays of a refresh event's records: the first record
// holds the per-class vectors (float64, exact: replay compares them), the
// second, when the refresh's matrices were kept, G and P (float32: they
// are drawn, never computed with, and float32 halves the file).
const (
	ArrayPrior    = "prior"
	ArrayRecall   = "recall"
	ArrayCoverage = "coverage"
	ArrayLambda   = "lambda" // absent when the objective has no multipliers
	ArrayAims     = "aims"   // the coverage aims (α/K + δ); absent without a coverage constraint and before they were recorded
	ArrayG        = "G"
	ArrayP        = "P"
)

func refreshData(step, total int, state loop.State, h loop.Hyper, loss float64, rs *loop.Refresh) RefreshData {
	d := RefreshData{
		Step: step, Total: total, State: string(state), Hyper: hyperData(h),
		K: rs.K, S: Num(rs.S), Psi: Num(rs.Psi), Objectives: objectivesOf(rs.Objectives),
		Report: reportData(rs.Report, false),
	}
	if !math.IsNaN(loss) {
		l := Num(loss)
		d.Loss = &l
	}
	if rs.Predicted != nil && rs.Realised != nil {
		p, r := Num(*rs.Predicted), Num(*rs.Realised)
		d.Predicted, d.Realised = &p, &r
	}
	return d
}

// vectorArrays is the first record of a refresh event.
func vectorArrays(rs *loop.Refresh) []runs.Array {
	vec := func(name string, v []float64) runs.Array {
		return runs.Array{Name: name, DType: runs.Float64, Shape: []int{len(v)}, Data: v}
	}
	out := []runs.Array{vec(ArrayPrior, rs.Report.Prior), vec(ArrayRecall, rs.Report.Recall), vec(ArrayCoverage, rs.Report.Coverage)}
	if len(rs.Lambda) > 0 {
		out = append(out, vec(ArrayLambda, rs.Lambda))
	}
	if len(rs.Aims) > 0 {
		out = append(out, vec(ArrayAims, rs.Aims))
	}
	return out
}

// matrixArrays is the second record of a refresh event.
func matrixArrays(rs *loop.Refresh) []runs.Array {
	return []runs.Array{
		{Name: ArrayG, DType: runs.Float32, Shape: []int{rs.K, rs.K}, Data: rs.G},
		{Name: ArrayP, DType: runs.Float32, Shape: []int{rs.K, rs.K}, Data: rs.P},
	}
}

// ControlData is the payload of a control event: a control that took
// effect at Step, or was refused (Error).
type ControlData struct {
	Op    string `json:"op"` // pause, resume, step, stop or set
	Key   string `json:"key,omitempty"`
	Value string `json:"value,omitempty"`
	At    int    `json:"at,omitempty"` // the step it was asked for (replay, fork), if any
	Step  int    `json:"step"`
	Error string `json:"error,omitempty"`
	// Source is who asked for it: user, schedule, adapt or replay
	// (docs/run-format.md); absent in records written before sources.
	Source string `json:"source,omitempty"`
	// Auto marks the engine's own controls (finetune.adapt, source
	// adapt): a replay or resume recomputes them rather than sending them
	// again. Written beside source so that an older selmix still knows.
	Auto bool `json:"auto,omitempty"`
}

func ControlRecord(a loop.Ack) ControlData {
	return ControlData{Op: a.Control.Op.String(), Key: a.Control.Key, Value: a.Control.Value, At: a.Control.At, Step: a.Step, Error: a.Err, Source: string(a.Control.Source), Auto: a.Control.Auto()}
}

func (d ControlData) Ack() (loop.Ack, error) {
	op, err := loop.ParseOp(d.Op)
	if err != nil {
		return loop.Ack{}, err
	}
	return loop.Ack{Control: loop.Control{Op: op, Key: d.Key, Value: d.Value, At: d.At, Source: loop.SourceOf(d.Source, d.Auto)}, Step: d.Step, Err: d.Error}, nil
}

// SummaryData is the payload of final and stop events and the content of
// summary.json: the optimized objective and every reported metric before
// and after fine-tuning, on validation and on test. A stop event keeps
// only the scalars (no per-class vectors).
type SummaryData struct {
	Steps                int        `json:"steps"`
	Objective            string     `json:"objective"`
	ValBefore            ReportData `json:"val_before"`
	ValAfter             ReportData `json:"val_after"`
	TestBefore           ReportData `json:"test_before"`
	TestAfter            ReportData `json:"test_after"`
	TestObjectivesBefore Objectives `json:"test_objectives_before"`
	TestObjectivesAfter  Objectives `json:"test_objectives_after"`
	// Best is the model kept at the best validation ψ of the optimized
	// objective; absent in runs written before selmix kept one.
	Best *BestData `json:"best,omitempty"`
	// PluginBefore and PluginAfter are the post-hoc plug-in classifier on
	// the pre-trained model and at the end; absent where the run did not
	// measure it.
	PluginBefore *PluginData `json:"plugin_before,omitempty"`
	PluginAfter  *PluginData `json:"plugin_after,omitempty"`
	Seconds      Num         `json:"seconds"`
}

// PluginData is a summary's plug-in classifier: the objective its biases
// were chosen for on validation, and its metrics on test.
type PluginData struct {
	Objective      string     `json:"objective"`
	Test           ReportData `json:"test"`
	TestObjectives Objectives `json:"test_objectives"`
}

func pluginData(p *loop.Plugin, vectors bool) *PluginData {
	if p == nil {
		return nil
	}
	return &PluginData{Objective: string(p.Objective), Test: reportData(p.Test, vectors), TestObjectives: objectivesOf(p.TestObj)}
}

func (d *PluginData) plugin() *loop.Plugin {
	if d == nil {
		return nil
	}
	return &loop.Plugin{Objective: metric.Objective(d.Objective), Test: d.Test.report(), TestObj: d.TestObjectives.values()}
}

// BestData is a summary's best: where the best checkpoint was taken, the
// objective it was judged on and its ψ, and the model's metrics there.
type BestData struct {
	Step           int        `json:"step"`
	Objective      string     `json:"objective"`
	Psi            Num        `json:"psi"`
	Val            ReportData `json:"val"`
	Test           ReportData `json:"test"`
	TestObjectives Objectives `json:"test_objectives"`
	// Aimed says psi is aimed at α/K + δ (loop.Aimed), not the
	// objective's reported ψ; absent (false) in runs written before it
	// was recorded, whose reader takes it from the refresh at step.
	Aimed bool `json:"aimed,omitempty"`
}

func bestData(b *loop.Best, vectors bool) *BestData {
	if b == nil {
		return nil
	}
	return &BestData{
		Step: b.Step, Objective: string(b.Objective), Psi: Num(b.Psi), Aimed: b.Aimed,
		Val: reportData(b.Val, vectors), Test: reportData(b.Test, vectors),
		TestObjectives: objectivesOf(b.TestObj),
	}
}

func (d *BestData) best() *loop.Best {
	if d == nil {
		return nil
	}
	return &loop.Best{
		Step: d.Step, Objective: metric.Objective(d.Objective), Psi: float64(d.Psi), Aimed: d.Aimed,
		Val: d.Val.report(), Test: d.Test.report(), TestObj: d.TestObjectives.values(),
	}
}

func SummaryRecord(s *loop.Summary, vectors bool) SummaryData {
	return SummaryData{
		Steps: s.Steps, Objective: string(s.Objective),
		ValBefore: reportData(s.ValBefore, vectors), ValAfter: reportData(s.ValAfter, vectors),
		TestBefore: reportData(s.TestBefore, vectors), TestAfter: reportData(s.TestAfter, vectors),
		TestObjectivesBefore: objectivesOf(s.TestObjBefore), TestObjectivesAfter: objectivesOf(s.TestObjAfter),
		Best:         bestData(s.Best, vectors),
		PluginBefore: pluginData(s.PluginBefore, vectors), PluginAfter: pluginData(s.PluginAfter, vectors),
		Seconds: Num(s.Seconds),
	}
}

func (d SummaryData) Summary() loop.Summary {
	return loop.Summary{
		Steps: d.Steps, Objective: metric.Objective(d.Objective),
		ValBefore: d.ValBefore.report(), ValAfter: d.ValAfter.report(),
		TestBefore: d.TestBefore.report(), TestAfter: d.TestAfter.report(),
		TestObjBefore: d.TestObjectivesBefore.values(), TestObjAfter: d.TestObjectivesAfter.values(),
		Best:         d.Best.best(),
		PluginBefore: d.PluginBefore.plugin(), PluginAfter: d.PluginAfter.plugin(),
		Seconds: float64(d.Seconds),
	}
}

// LoadSummary reads a run's summary.json: the summary of its end, or of
// where it stopped. The error wraps os.ErrNotExist for a run without one.
func LoadSummary(r *runs.Run) (*loop.Summary, error) {
	b, err := r.Summary()
	if err != nil {
		return nil, err
	}
	var d SummaryData
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s/summary.json: %w", r.Dir, err)
	}
	s := d.Summary()
	return &s, nil
}

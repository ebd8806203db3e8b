package record

import (
	"encoding/json"
	"fmt"

	"selmix/core/gain"
	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/runs"
)

// Format 1 (runs written before run.json had a "format") stored the
// engine's structs as encoding/json rendered them: Go field names as keys,
// objective values by position, G and P as JSON arrays. These types
// freeze that shape, so format-1 runs keep opening whatever the engine's
// types become; decoding turns them into format-2 payloads, which then
// take the one path every reader uses.

// v1Objectives is metric.Objectives() as format 1 wrote it, by position.
var v1Objectives = []string{
	"mean-recall", "min-recall", "gmean", "hmean", "min-ht-recall",
	"mean-recall@cov", "hmean@cov", "mean-recall@ht-cov", "hmean@ht-cov",
}

func v1ObjectivesOf(vals []float64) Objectives {
	if vals == nil {
		return nil
	}
	out := Objectives{}
	for i, v := range vals {
		if i < len(v1Objectives) {
			out[v1Objectives[i]] = Num(v)
		}
	}
	return out
}

type v1Hyper struct {
	Objective, Policy                            string
	Form                                         int
	S, Omega, Alpha, Tau, LambdaMax, LR, BetaMin float64
	Refresh, Batch                               int
}

func (h v1Hyper) data() (HyperData, error) {
	if h.Form != int(gain.Paper) && h.Form != int(gain.Official) {
		return HyperData{}, fmt.Errorf("hyper: unknown gain form %d", h.Form)
	}
	d := loop.DefaultHyper() // format 1 had no gain_norm or adapt key: the defaults ran
	d.Objective, d.Policy, d.Form = metric.Objective(h.Objective), gain.Policy(h.Policy), gain.Form(h.Form)
	d.S, d.Omega, d.Alpha, d.Tau, d.LambdaMax = h.S, h.Omega, h.Alpha, h.Tau, h.LambdaMax
	d.LR, d.BetaMin, d.Refresh, d.Batch = h.LR, h.BetaMin, h.Refresh, h.Batch
	return HyperData{d}, nil
}

type v1Report struct {
	K                                                          int
	Prior, Recall, Coverage                                    []float64
	MeanRecall, MinRecall, HMean, GMean, MinCoverage, Accuracy float64
	HeadRecall, TailRecall, MinHTRecall                        float64
	HeadCoverage, TailCoverage, MinHTCoverage                  float64
	Worst                                                      int
}

func (r v1Report) data() ReportData {
	return ReportData{
		K: r.K, MeanRecall: Num(r.MeanRecall), MinRecall: Num(r.MinRecall), HMean: Num(r.HMean), GMean: Num(r.GMean),
		MinCoverage: Num(r.MinCoverage), Accuracy: Num(r.Accuracy),
		HeadRecall: Num(r.HeadRecall), TailRecall: Num(r.TailRecall), MinHTRecall: Num(r.MinHTRecall),
		HeadCoverage: Num(r.HeadCoverage), TailCoverage: Num(r.TailCoverage), MinHTCoverage: Num(r.MinHTCoverage),
		Worst: r.Worst, Prior: nums(r.Prior), Recall: nums(r.Recall), Coverage: nums(r.Coverage),
	}
}

type v1Refresh struct {
	Step  int      `json:"step"`
	Total int      `json:"total"`
	State string   `json:"state"`
	Hyper v1Hyper  `json:"hyper"`
	Loss  *float64 `json:"loss"`
	Stats struct {
		Report     v1Report
		Objectives []float64
		Psi        float64
		Lambda     []float64
		G, P       []float64
		K          int
		S          float64
	} `json:"stats"`
}

// v1Refresh decodes a format-1 refresh payload into its format-2 payload
// and arrays (vectors, then G and P as format 1 had them: float64).
func decodeV1Refresh(b []byte) (RefreshData, [][]runs.Array, error) {
	var v v1Refresh
	if err := json.Unmarshal(b, &v); err != nil {
		return RefreshData{}, nil, err
	}
	st := v.Stats
	rep := st.Report.data()
	hy, err := v.Hyper.data()
	if err != nil {
		return RefreshData{}, nil, err
	}
	d := RefreshData{
		Step: v.Step, Total: v.Total, State: v.State, Hyper: hy,
		K: st.K, S: Num(st.S), Psi: Num(st.Psi), Objectives: v1ObjectivesOf(st.Objectives),
	}
	if v.Loss != nil {
		l := Num(*v.Loss)
		d.Loss = &l
	}
	vec := func(name string, v []float64) runs.Array {
		return runs.Array{Name: name, DType: runs.Float64, Shape: []int{len(v)}, Data: v}
	}
	arrs := [][]runs.Array{{vec(ArrayPrior, st.Report.Prior), vec(ArrayRecall, st.Report.Recall), vec(ArrayCoverage, st.Report.Coverage)}}
	if len(st.Lambda) > 0 {
		arrs[0] = append(arrs[0], vec(ArrayLambda, st.Lambda))
	}
	if st.G != nil || st.P != nil {
		arrs = append(arrs, []runs.Array{
			{Name: ArrayG, DType: runs.Float64, Shape: []int{st.K, st.K}, Data: st.G},
			{Name: ArrayP, DType: runs.Float64, Shape: []int{st.K, st.K}, Data: st.P},
		})
	}
	rep.Prior, rep.Recall, rep.Coverage = nil, nil, nil
	d.Report = rep
	return d, arrs, nil
}

type v1Ack struct {
	Control struct {
		Op         int
		Key, Value string
		At         int
	}
	Step int
	Err  string
}

var v1Ops = []string{"pause", "resume", "step", "stop", "set"}

func decodeV1Control(b []byte) (ControlData, error) {
	var a v1Ack
	if err := json.Unmarshal(b, &a); err != nil {
		return ControlData{}, err
	}
	if a.Control.Op < 0 || a.Control.Op >= len(v1Ops) {
		return ControlData{}, fmt.Errorf("unknown control op %d", a.Control.Op)
	}
	return ControlData{Op: v1Ops[a.Control.Op], Key: a.Control.Key, Value: a.Control.Value, At: a.Control.At, Step: a.Step, Error: a.Err}, nil
}

type v1Summary struct {
	Steps                       int
	Objective                   string
	ValBefore, ValAfter         v1Report
	TestBefore, TestAfter       v1Report
	TestObjBefore, TestObjAfter []float64
	Seconds                     float64
}

func decodeV1Summary(b []byte) (SummaryData, error) {
	var s v1Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return SummaryData{}, err
	}
	return SummaryData{
		Steps: s.Steps, Objective: s.Objective,
		ValBefore: s.ValBefore.data(), ValAfter: s.ValAfter.data(),
		TestBefore: s.TestBefore.data(), TestAfter: s.TestAfter.data(),
		TestObjectivesBefore: v1ObjectivesOf(s.TestObjBefore), TestObjectivesAfter: v1ObjectivesOf(s.TestObjAfter),
		Seconds: Num(s.Seconds),
	}, nil
}

package tensorboard

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"selmix/runs"
	"selmix/runs/export"
	"selmix/runs/export/tensorboard/tbpb"
	"selmix/runs/export/tensorboard/tbpb/hparamspb"
)

// session is a run as the HParams plugin sees it.
type session struct {
	name  string // the run's folder under the output
	start *hparamspb.SessionStartInfo
	end   *hparamspb.SessionEndInfo // nil unless the run finished or failed
}

// newSession: the run's hyperparameters are its configuration, flattened
// ("finetune.s"), and its tags (HParamTags).
func newSession(r export.Recorded) session {
	hp := map[string]*structpb.Value{}
	for k, v := range r.Config {
		switch x := v.(type) {
		case int64:
			hp[k] = structpb.NewNumberValue(float64(x))
		case float64:
			hp[k] = structpb.NewNumberValue(x)
		case bool:
			hp[k] = structpb.NewBoolValue(x)
		case string:
			hp[k] = structpb.NewStringValue(x)
		}
	}
	hp[HParamTags] = structpb.NewStringValue(strings.Join(r.Meta.Tags, " "))
	created, _ := time.Parse(time.RFC3339, r.Meta.Created)
	s := session{start: &hparamspb.SessionStartInfo{Hparams: hp, ModelUri: r.Dir, StartTimeSecs: seconds(created)}}
	switch r.Status {
	case runs.StatusFinished:
		s.end = &hparamspb.SessionEndInfo{Status: hparamspb.Status_STATUS_SUCCESS, EndTimeSecs: seconds(endTime(r.Hist))}
	case runs.StatusError:
		s.end = &hparamspb.SessionEndInfo{Status: hparamspb.Status_STATUS_FAILURE, EndTimeSecs: seconds(endTime(r.Hist))}
	}
	return s
}

// MetricTags are the scalar tags the HParams tab shows for every run: ψ,
// every objective's ψ and every reported metric on validation at the
// last refresh, and the same on test after fine-tuning.
func MetricTags() []string {
	var out []string
	for _, pre := range []string{"", "test/"} {
		for _, m := range export.CompareMetrics() {
			if pre == "" || m != export.Psi {
				out = append(out, pre+m)
			}
		}
	}
	return out
}

// writeExperiment writes the experiment summary of sessions: every
// hyperparameter any of them has, with its type and the values seen,
// and MetricTags.
func writeExperiment(w io.Writer, sessions []session) error {
	seen := map[string][]*structpb.Value{}
	var first float64
	for _, s := range sessions {
		for k, v := range s.start.Hparams {
			seen[k] = append(seen[k], v)
		}
		if t := s.start.StartTimeSecs; t > 0 && (first == 0 || t < first) {
			first = t
		}
	}
	var names []string
	for _, s := range sessions {
		names = append(names, s.name)
	}
	slices.Sort(names)
	exp := &hparamspb.Experiment{
		Description:     "selmix runs " + strings.Join(names, ", "),
		TimeCreatedSecs: first,
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		exp.HparamInfos = append(exp.HparamInfos, hparamInfo(k, seen[k]))
	}
	for _, tag := range MetricTags() {
		ds := hparamspb.DatasetType_DATASET_VALIDATION
		if strings.HasPrefix(tag, "test/") {
			ds = hparamspb.DatasetType_DATASET_UNKNOWN
		}
		exp.MetricInfos = append(exp.MetricInfos, &hparamspb.MetricInfo{Name: &hparamspb.MetricName{Tag: tag}, DatasetType: ds})
	}
	rw := &recordWriter{w: bufio.NewWriter(w)}
	rw.event(&tbpb.Event{WallTime: first, What: &tbpb.Event_FileVersion{FileVersion: fileVersion}})
	rw.summary(0, time.Unix(0, int64(first*1e9)), []*tbpb.Summary_Value{hparamsValue(TagExperiment, &hparamspb.HParamsPluginData{
		Data: &hparamspb.HParamsPluginData_Experiment{Experiment: exp},
	})})
	if rw.err != nil {
		return rw.err
	}
	return rw.w.Flush()
}

// hparamInfo describes hyperparameter name from the values it took: a
// number (with their interval), a bool or a string (with the values
// seen); one of mixed kinds is a string.
func hparamInfo(name string, vals []*structpb.Value) *hparamspb.HParamInfo {
	info := &hparamspb.HParamInfo{Name: name}
	lo, hi := math.Inf(1), math.Inf(-1)
	kinds := map[string]bool{}
	var distinct []*structpb.Value
	for _, v := range vals {
		switch x := v.Kind.(type) {
		case *structpb.Value_NumberValue:
			kinds["number"] = true
			lo, hi = min(lo, x.NumberValue), max(hi, x.NumberValue)
		case *structpb.Value_BoolValue:
			kinds["bool"] = true
		case *structpb.Value_StringValue:
			kinds["string"] = true
		}
		if !slices.ContainsFunc(distinct, func(d *structpb.Value) bool { return proto.Equal(d, v) }) {
			distinct = append(distinct, v)
		}
	}
	switch {
	case len(kinds) == 1 && kinds["number"]:
		info.Type = hparamspb.DataType_DATA_TYPE_FLOAT64
		info.Domain = &hparamspb.HParamInfo_DomainInterval{DomainInterval: &hparamspb.Interval{MinValue: lo, MaxValue: hi}}
	case len(kinds) == 1:
		info.Type = hparamspb.DataType_DATA_TYPE_STRING
		if kinds["bool"] {
			info.Type = hparamspb.DataType_DATA_TYPE_BOOL
		}
		slices.SortFunc(distinct, func(a, b *structpb.Value) int { return strings.Compare(valueText(a), valueText(b)) })
		info.Domain = &hparamspb.HParamInfo_DomainDiscrete{DomainDiscrete: &structpb.ListValue{Values: distinct}}
	default:
		info.Type = hparamspb.DataType_DATA_TYPE_STRING
	}
	return info
}

func valueText(v *structpb.Value) string { return fmt.Sprint(v.AsInterface()) }

// maxStartRecords and maxRecordLen bound what readSessionStart reads: our
// files have the session start in their second record.
const (
	maxStartRecords = 4
	maxRecordLen    = 64 << 20
)

// readSessionStart finds the HParams session start in the first records
// of an event file of ours.
func readSessionStart(path string) (*hparamspb.SessionStartInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	for range maxStartRecords {
		var head [12]byte
		if _, err := io.ReadFull(br, head[:]); err != nil {
			return nil, err
		}
		n := binary.LittleEndian.Uint64(head[:8])
		if MaskedCRC(head[:8]) != binary.LittleEndian.Uint32(head[8:]) || n > maxRecordLen {
			return nil, fmt.Errorf("%s: bad record header", path)
		}
		data := make([]byte, n+4)
		if _, err := io.ReadFull(br, data); err != nil {
			return nil, err
		}
		if MaskedCRC(data[:n]) != binary.LittleEndian.Uint32(data[n:]) {
			return nil, fmt.Errorf("%s: bad record checksum", path)
		}
		var ev tbpb.Event
		if err := proto.Unmarshal(data[:n], &ev); err != nil {
			return nil, err
		}
		for _, v := range ev.GetSummary().GetValue() {
			if v.Tag != TagSessionStart {
				continue
			}
			var d hparamspb.HParamsPluginData
			if err := proto.Unmarshal(v.GetMetadata().GetPluginData().GetContent(), &d); err != nil {
				return nil, err
			}
			if s := d.GetSessionStartInfo(); s != nil {
				return s, nil
			}
		}
	}
	return nil, errors.New("no session start")
}

// Package tensorboard writes recorded runs as TensorBoard event files:
// one directory per run (named by the run's name) holding one event file (TFRecord framing of
// tensorboard.Event protocol buffers) with every refresh's numbers as
// scalars (runs/export's vocabulary), the per-class ones as scalars or,
// above MaxClassScalars classes, the worst and best ones and a
// histogram, G and P as images where they were kept, the configuration
// as text, and the HParams plugin's session so runs compare in the
// HParams tab; the HParams experiment summary goes in the output
// directory itself (docs/run-format.md, "TensorBoard").
package tensorboard

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"selmix/internal/atomicfile"
	"selmix/internal/matrixpng"
	"selmix/runs/export"
	"selmix/runs/export/tensorboard/tbpb"
	"selmix/runs/export/tensorboard/tbpb/hparamspb"
	"selmix/runs/record"
)

// MaxClassScalars is the most classes whose per-class series are all
// written as scalars; above it, only the Extremes worst and Extremes best
// classes (by their value at the last refresh) are, and every refresh has
// a histogram of all K values under <metric>/all.
const (
	MaxClassScalars = 100
	Extremes        = 20
)

// Tags of the text and HParams summaries.
const (
	TagConfig = "config"
	TagTags   = "run/tags"
	TagNote   = "run/note"
	// The HParams plugin's tags (tensorboard/plugins/hparams/metadata.py).
	TagExperiment   = "_hparams_/experiment"
	TagSessionStart = "_hparams_/session_start_info"
	TagSessionEnd   = "_hparams_/session_end_info"
	// HParamTags is the hyperparameter that holds a run's tags (space
	// separated); the others are its config keys ("finetune.s").
	HParamTags = "run.tags"
)

// Names of the files written.
const (
	fileVersion = "brain.Event:2"
	// ExperimentFile is the HParams experiment summary in the output
	// directory; each export replaces it.
	ExperimentFile = "events.out.tfevents.0.selmix-hparams"
	runFileSuffix  = ".selmix"
)

// RunFile is the name of a run's event file: TensorBoard reads files
// whose name holds "tfevents"; the time is the run's creation, so a new
// export of the same run replaces its file.
func RunFile(created time.Time) string {
	return fmt.Sprintf("events.out.tfevents.%d%s", created.Unix(), runFileSuffix)
}

// Export writes each run's event file into out/<folder>/, where the
// folder is the run's name, with its id appended where two runs share
// it (see folders), and the HParams experiment summary into out,
// creating out if needed, and returns the paths written. Every file is
// written atomically. An event file of the same run that an earlier
// export left in another folder (by id, as exports did before, or under
// an earlier name) is removed once the new one is written, with its
// folder if that is left empty, so each run is in one folder. The
// experiment covers the runs given and those an earlier export left in
// out, so exports of several runs one at a time still compare in the
// HParams tab.
func Export(out string, rs []export.Recorded) ([]string, error) {
	prev := scanEarlier(out)
	dirs := folders(out, rs, prev)
	var paths []string
	var sessions []session
	for i, r := range rs {
		created, _ := time.Parse(time.RFC3339, r.Meta.Created)
		dir := filepath.Join(out, dirs[i])
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return paths, err
		}
		path := filepath.Join(dir, RunFile(created))
		s := newSession(r)
		s.name = dirs[i]
		err := atomicfile.Write(path, func(w io.Writer) error { return writeRun(w, r, created, s) })
		if err != nil {
			return paths, err
		}
		paths = append(paths, path)
		sessions = append(sessions, s)
	}
	given := map[string]bool{}
	for _, r := range rs {
		given[r.Meta.ID] = true
	}
	kept := map[string]bool{}
	for _, e := range prev {
		switch {
		case slices.Contains(paths, e.file):
			// rewritten in place
		case given[e.id]:
			if err := os.Remove(e.file); err != nil && !os.IsNotExist(err) {
				return paths, err
			}
			os.Remove(filepath.Join(out, e.dir)) // only if left empty
		case !kept[e.id]:
			kept[e.id] = true
			sessions = append(sessions, session{name: e.dir, start: e.start})
		}
	}
	path := filepath.Join(out, ExperimentFile)
	err := atomicfile.Write(path, func(w io.Writer) error { return writeExperiment(w, sessions) })
	if err != nil {
		return paths, err
	}
	return append(paths, path), nil
}

// recordWriter writes TFRecords: each record is its length (uint64), the
// masked CRC-32C of the length, the data and the masked CRC-32C of the
// data, all little-endian.
type recordWriter struct {
	w   *bufio.Writer
	err error
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// deterministic marshals maps (the hyperparameters) in key order, so an
// export of the same run is the same bytes.
var deterministic = proto.MarshalOptions{Deterministic: true}

// MaskedCRC is TFRecord's checksum of b: its CRC-32C rotated right by 15
// bits plus 0xa282ead8.
func MaskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return (c>>15 | c<<17) + 0xa282ead8
}

func (rw *recordWriter) event(e *tbpb.Event) {
	if rw.err != nil {
		return
	}
	data, err := deterministic.Marshal(e)
	if err != nil {
		rw.err = err
		return
	}
	var head [12]byte
	binary.LittleEndian.PutUint64(head[:8], uint64(len(data)))
	binary.LittleEndian.PutUint32(head[8:], MaskedCRC(head[:8]))
	var foot [4]byte
	binary.LittleEndian.PutUint32(foot[:], MaskedCRC(data))
	for _, b := range [][]byte{head[:], data, foot[:]} {
		if _, err := rw.w.Write(b); err != nil {
			rw.err = err
			return
		}
	}
}

func (rw *recordWriter) summary(step int, t time.Time, vals []*tbpb.Summary_Value) {
	if len(vals) == 0 {
		return
	}
	rw.event(&tbpb.Event{WallTime: seconds(t), Step: int64(step), What: &tbpb.Event_Summary{Summary: &tbpb.Summary{Value: vals}}})
}

// seconds is t in seconds since the epoch; 0 for the zero time.
func seconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

// writeRun writes the event file of one run.
func writeRun(w io.Writer, r export.Recorded, created time.Time, s session) error {
	rw := &recordWriter{w: bufio.NewWriterSize(w, 1<<16)}
	rw.event(&tbpb.Event{WallTime: seconds(created), What: &tbpb.Event_FileVersion{FileVersion: fileVersion}})

	start := []*tbpb.Summary_Value{hparamsValue(TagSessionStart, &hparamspb.HParamsPluginData{
		Data: &hparamspb.HParamsPluginData_SessionStartInfo{SessionStartInfo: s.start},
	})}
	start = append(start, textValue(TagConfig, "```toml\n"+strings.TrimRight(r.ConfigText, "\n")+"\n```"))
	if len(r.Meta.Tags) > 0 {
		start = append(start, textValue(TagTags, strings.Join(r.Meta.Tags, " ")))
	}
	if r.Meta.Note != "" {
		start = append(start, textValue(TagNote, r.Meta.Note))
	}
	rw.summary(0, created, start)

	h := r.Hist
	K := runK(h)
	names := export.Classes(h)
	val := newClassPicker(K, names, lastValues(h))
	enc := &png.Encoder{CompressionLevel: png.BestSpeed, BufferPool: new(pngBuffers)}
	for i := range h.Refreshes {
		rf := &h.Refreshes[i]
		vals := pointValues(export.Refresh(rf), val, "")
		if h.HasMatrices(i) {
			G, P, err := h.Matrices(i)
			if err != nil {
				return err
			}
			for _, m := range []struct {
				tag       string
				v         []float64
				diverging bool
			}{{"matrices/G", G, true}, {"matrices/P", P, false}} {
				if len(m.v) != K*K {
					continue
				}
				var buf bytes.Buffer
				if err := enc.Encode(&buf, matrixpng.Image(m.v, K, m.diverging)); err != nil {
					return err
				}
				side := int32(matrixpng.Side(K))
				vals = append(vals, &tbpb.Summary_Value{Tag: m.tag, Value: &tbpb.Summary_Value_Image{Image: &tbpb.Summary_Image{
					Height: side, Width: side, Colorspace: 3, EncodedImageString: buf.Bytes(),
				}}})
			}
		}
		rw.summary(rf.Step, rf.Time, vals)
	}
	if h.Final != nil {
		test := newClassPicker(K, names, finalValues(h))
		var pts []export.Point
		for p := range export.Final(h) {
			pts = append(pts, p)
		}
		for _, step := range []int{0, h.Final.Steps} {
			at := slices.IndexFunc(pts, func(p export.Point) bool { return p.Step == step })
			if at < 0 {
				continue
			}
			t := pts[at].Time
			sel := func(yield func(export.Point) bool) {
				for _, p := range pts {
					if p.Step == step && !yield(p) {
						return
					}
				}
			}
			rw.summary(step, t, pointValues(sel, test, "test/"))
		}
	}
	if end := s.end; end != nil {
		rw.summary(lastStep(h), endTime(h), []*tbpb.Summary_Value{hparamsValue(TagSessionEnd, &hparamspb.HParamsPluginData{
			Data: &hparamspb.HParamsPluginData_SessionEndInfo{SessionEndInfo: end},
		})})
	}
	if rw.err != nil {
		return rw.err
	}
	return rw.w.Flush()
}

// pngBuffers lets one PNG encoder reuse its buffers from image to image.
type pngBuffers struct{ b *png.EncoderBuffer }

func (p *pngBuffers) Get() *png.EncoderBuffer  { return p.b }
func (p *pngBuffers) Put(b *png.EncoderBuffer) { p.b = b }

// runK is the number of classes of a run.
func runK(h *record.History) int {
	if len(h.Starts) > 0 && h.Starts[0].K > 0 {
		return h.Starts[0].K
	}
	if len(h.Refreshes) > 0 {
		return h.Refreshes[0].Stats.K
	}
	if h.Final != nil {
		return len(h.Final.TestAfter.Recall)
	}
	return 0
}

func lastStep(h *record.History) int {
	if h.Final != nil {
		return h.Final.Steps
	}
	if n := len(h.Refreshes); n > 0 {
		return h.Refreshes[n-1].Step
	}
	return 0
}

func endTime(h *record.History) time.Time {
	if !h.FinalTime.IsZero() {
		return h.FinalTime
	}
	if n := len(h.Refreshes); n > 0 {
		return h.Refreshes[n-1].Time
	}
	return time.Time{}
}

// pointValues turns points into summary values: scalars, with the
// per-class ones those pick keeps, and a histogram of each per-class
// metric when pick keeps only some classes. prefix starts every tag.
func pointValues(pts func(func(export.Point) bool), pick *classPicker, prefix string) []*tbpb.Summary_Value {
	var vals []*tbpb.Summary_Value
	all := map[string][]float64{}
	var order []string
	for p := range pts {
		tag := prefix + p.Metric
		if p.Class >= 0 {
			if pick.thin {
				if _, ok := all[p.Metric]; !ok {
					order = append(order, p.Metric)
				}
				all[p.Metric] = append(all[p.Metric], p.Value)
			}
			if !pick.keeps(p.Metric, p.Class) {
				continue
			}
			tag += "/" + export.ClassTag(p.Class, pick.K, pick.names)
		}
		vals = append(vals, &tbpb.Summary_Value{Tag: tag, Value: &tbpb.Summary_Value_SimpleValue{SimpleValue: float32(p.Value)}})
	}
	for _, m := range order {
		vals = append(vals, &tbpb.Summary_Value{Tag: prefix + m + "/all", Value: &tbpb.Summary_Value_Histo{Histo: Histogram(all[m])}})
	}
	return vals
}

// HistogramBins is the number of equal bins over [0, 1] of a
// Histogram; values outside fall in the first or last.
const HistogramBins = 20

// Histogram is the histogram of per-class values (recalls, coverages and
// multipliers live in [0, 1]): HistogramBins equal bins, bin i holding
// the values in (i/n, (i+1)/n] (the first also everything ≤ 0, the last
// everything above 1). Values that are not finite are left out.
func Histogram(v []float64) *tbpb.HistogramProto {
	h := &tbpb.HistogramProto{Min: math.Inf(1), Max: math.Inf(-1)}
	h.BucketLimit = make([]float64, HistogramBins)
	h.Bucket = make([]float64, HistogramBins)
	for i := range HistogramBins {
		h.BucketLimit[i] = float64(i+1) / HistogramBins
	}
	h.BucketLimit[HistogramBins-1] = math.MaxFloat64
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		b := int(math.Ceil(x*HistogramBins)) - 1
		b = min(max(b, 0), HistogramBins-1)
		h.Bucket[b]++
		h.Num++
		h.Sum += x
		h.SumSquares += x * x
		h.Min, h.Max = min(h.Min, x), max(h.Max, x)
	}
	if h.Num == 0 {
		h.Min, h.Max = 0, 0
	}
	return h
}

// classPicker says which classes of each per-class metric get scalars:
// all of them up to MaxClassScalars classes, else the Extremes lowest
// and Extremes highest by the metric's last values.
type classPicker struct {
	K     int
	names []string
	thin  bool
	sel   map[string]map[int]bool
}

func newClassPicker(K int, names []string, last map[string][]float64) *classPicker {
	p := &classPicker{K: K, names: names, thin: K > MaxClassScalars, sel: map[string]map[int]bool{}}
	if !p.thin {
		return p
	}
	for m, v := range last {
		idx := make([]int, len(v))
		for i := range idx {
			idx[i] = i
		}
		// Lowest first; NaN below everything (a class that could not be
		// measured is among the worst).
		slices.SortStableFunc(idx, func(a, b int) int {
			x, y := v[a], v[b]
			switch {
			case math.IsNaN(x) && math.IsNaN(y):
				return 0
			case math.IsNaN(x):
				return -1
			case math.IsNaN(y):
				return 1
			case x < y:
				return -1
			case x > y:
				return 1
			}
			return 0
		})
		keep := map[int]bool{}
		for i, c := range idx {
			if i < Extremes || i >= len(idx)-Extremes {
				keep[c] = true
			}
		}
		p.sel[m] = keep
	}
	return p
}

func (p *classPicker) keeps(m string, c int) bool { return !p.thin || p.sel[m][c] }

// lastValues are the per-class values of each per-class metric at the
// last refresh that has it.
func lastValues(h *record.History) map[string][]float64 {
	out := map[string][]float64{}
	for i := len(h.Refreshes) - 1; i >= 0; i-- {
		collect(out, export.Refresh(&h.Refreshes[i]))
	}
	return out
}

// finalValues are the per-class values of the test set after
// fine-tuning.
func finalValues(h *record.History) map[string][]float64 {
	out := map[string][]float64{}
	step := h.Final.Steps
	collect(out, func(yield func(export.Point) bool) {
		for p := range export.Final(h) {
			if p.Step == step && !yield(p) {
				return
			}
		}
	})
	return out
}

// collect adds to out the per-class values of the metrics it does not
// have yet.
func collect(out map[string][]float64, pts func(func(export.Point) bool)) {
	got := map[string][]float64{}
	for p := range pts {
		if p.Class >= 0 {
			if _, done := out[p.Metric]; !done {
				got[p.Metric] = append(got[p.Metric], p.Value)
			}
		}
	}
	for m, v := range got {
		out[m] = v
	}
}

// textValue is a summary of the text plugin: a scalar string tensor
// rendered as Markdown.
func textValue(tag, text string) *tbpb.Summary_Value {
	return &tbpb.Summary_Value{
		Tag: tag,
		Metadata: &tbpb.SummaryMetadata{
			PluginData: &tbpb.SummaryMetadata_PluginData{PluginName: "text"},
			DataClass:  tbpb.DataClass_DATA_CLASS_TENSOR,
		},
		Value: &tbpb.Summary_Value_Tensor{Tensor: &tbpb.TensorProto{
			Dtype: tbpb.DataType_DT_STRING, TensorShape: &tbpb.TensorShapeProto{}, StringVal: [][]byte{[]byte(text)},
		}},
	}
}

// hparamsValue is a summary of the HParams plugin: its data in the
// metadata, an empty float tensor as the value (as TensorBoard's own
// hparams summaries have).
func hparamsValue(tag string, d *hparamspb.HParamsPluginData) *tbpb.Summary_Value {
	content, err := deterministic.Marshal(d)
	if err != nil {
		panic(err) // a message we built: it always marshals
	}
	return &tbpb.Summary_Value{
		Tag: tag,
		Metadata: &tbpb.SummaryMetadata{
			PluginData: &tbpb.SummaryMetadata_PluginData{PluginName: "hparams", Content: content},
		},
		Value: &tbpb.Summary_Value_Tensor{Tensor: &tbpb.TensorProto{
			Dtype: tbpb.DataType_DT_FLOAT, TensorShape: &tbpb.TensorShapeProto{Dim: []*tbpb.TensorShapeProto_Dim{{Size: 0}}},
		}},
	}
}

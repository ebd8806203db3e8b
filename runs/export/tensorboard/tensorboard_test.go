package tensorboard

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"image/png"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"
	"google.golang.org/protobuf/proto"

	"selmix/core/metric"
	"selmix/internal/matrixpng"
	"selmix/runs"
	"selmix/runs/export"
	"selmix/runs/export/tensorboard/tbpb"
	"selmix/runs/export/tensorboard/tbpb/hparamspb"
	"selmix/runs/record"
	"selmix/runs/runstest"
)

// vizRuns holds two recorded runs (K = 10, 11 refreshes, finished): a
// SelMix run (min-recall, per-class multipliers, two controls) and a
// uniform-mixup one.
var vizRuns = filepath.Join("..", "..", "..", "viz", "testdata", "run")

// readEvents decodes an event file without the package's code: it checks
// the TFRecord framing (length, masked CRC-32C of the length, data,
// masked CRC-32C of the data) and unmarshals each record as an Event.
func readEvents(t *testing.T, path string) []*tbpb.Event {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	table := crc32.MakeTable(crc32.Castagnoli)
	mask := func(b []byte) uint32 {
		c := crc32.Checksum(b, table)
		return ((c >> 15) | (c << 17)) + 0xa282ead8
	}
	var evs []*tbpb.Event
	for off := 0; off < len(b); {
		if len(b)-off < 12 {
			t.Fatalf("%s: %d bytes left at %d, less than a record header", path, len(b)-off, off)
		}
		n := int(binary.LittleEndian.Uint64(b[off:]))
		if got, want := binary.LittleEndian.Uint32(b[off+8:]), mask(b[off:off+8]); got != want {
			t.Fatalf("%s at %d: length CRC %#x, want %#x", path, off, got, want)
		}
		if len(b)-off < 16+n {
			t.Fatalf("%s at %d: record of %d bytes runs past the end", path, off, n)
		}
		data := b[off+12 : off+12+n]
		if got, want := binary.LittleEndian.Uint32(b[off+12+n:]), mask(data); got != want {
			t.Fatalf("%s at %d: data CRC %#x, want %#x", path, off, got, want)
		}
		var ev tbpb.Event
		if err := proto.Unmarshal(data, &ev); err != nil {
			t.Fatalf("%s at %d: %v", path, off, err)
		}
		evs = append(evs, &ev)
		off += 16 + n
	}
	return evs
}

// point is one value of a scalar series.
type point struct {
	step int
	wall float64
	v    float32
}

// scalars collects every scalar series of an event file by tag.
func scalars(evs []*tbpb.Event) map[string][]point {
	out := map[string][]point{}
	for _, ev := range evs {
		for _, v := range ev.GetSummary().GetValue() {
			if sv, ok := v.Value.(*tbpb.Summary_Value_SimpleValue); ok {
				out[v.Tag] = append(out[v.Tag], point{int(ev.Step), ev.WallTime, sv.SimpleValue})
			}
		}
	}
	return out
}

func loadRun(t *testing.T, root, id string) export.Recorded {
	t.Helper()
	r, err := runs.Open(root, id)
	if err != nil {
		t.Fatal(err)
	}
	run, err := export.Load(r)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func exportRuns(t *testing.T, out string, ids ...string) []export.Recorded {
	t.Helper()
	var rs []export.Recorded
	for _, id := range ids {
		rs = append(rs, loadRun(t, vizRuns, id))
	}
	if _, err := Export(out, rs); err != nil {
		t.Fatal(err)
	}
	return rs
}

func runFile(t *testing.T, out string, r export.Recorded) string {
	t.Helper()
	created, _ := time.Parse(time.RFC3339, r.Meta.Created)
	return filepath.Join(out, r.Meta.Name, RunFile(created))
}

func wall(tm time.Time) float64 { return float64(tm.UnixNano()) / 1e9 }

// Every scalar series of the event file is the run's own values, at the
// refresh's step and time: every scalar of every refresh, per-class
// recall, coverage and multipliers, and the test set before and after;
// no other series.
func TestScalarsAreTheRunsValues(t *testing.T) {
	out := t.TempDir()
	for _, r := range exportRuns(t, out, "viz-selmix", "viz-uniform") {
		got := scalars(readEvents(t, runFile(t, out, r)))
		want := map[string][]point{}
		add := func(tag string, step int, tm time.Time, v float64) {
			want[tag] = append(want[tag], point{step, wall(tm), float32(v)})
		}
		names := r.Hist.Starts[0].ClassNames
		class := func(c int) string {
			return fmt.Sprintf("%d_%s", c, strings.NewReplacer("/", "_", " ", "_").Replace(names[c]))
		}
		report := func(pre string, step int, tm time.Time, d record.ReportData) {
			for k, v := range map[string]record.Num{
				"mean_recall": d.MeanRecall, "min_recall": d.MinRecall, "hmean": d.HMean, "gmean": d.GMean,
				"min_coverage": d.MinCoverage, "accuracy": d.Accuracy, "head_recall": d.HeadRecall, "tail_recall": d.TailRecall,
				"min_ht_recall": d.MinHTRecall, "head_coverage": d.HeadCoverage, "tail_coverage": d.TailCoverage, "min_ht_coverage": d.MinHTCoverage,
			} {
				add(pre+"metrics/"+k, step, tm, float64(v))
			}
		}
		for i := range r.Hist.Refreshes {
			rf := &r.Hist.Refreshes[i]
			d := rf.Data()
			add("psi", rf.Step, rf.Time, float64(d.Psi))
			add("s", rf.Step, rf.Time, float64(d.S))
			for o, v := range d.Objectives {
				add("objectives/"+o, rf.Step, rf.Time, float64(v))
			}
			report("", rf.Step, rf.Time, d.Report)
			if d.Loss != nil {
				add("loss", rf.Step, rf.Time, float64(*d.Loss))
			}
			if d.Predicted != nil {
				add("delta_psi/predicted", rf.Step, rf.Time, float64(*d.Predicted))
				add("delta_psi/realised", rf.Step, rf.Time, float64(*d.Realised))
			}
			for c := range rf.Stats.Report.Recall {
				add("recall/"+class(c), rf.Step, rf.Time, rf.Stats.Report.Recall[c])
				add("coverage/"+class(c), rf.Step, rf.Time, rf.Stats.Report.Coverage[c])
			}
			for c, v := range rf.Stats.Lambda {
				add("lambda/"+class(c), rf.Step, rf.Time, v)
			}
		}
		f := r.Hist.Final
		first := r.Hist.Refreshes[0].Time
		for _, side := range []struct {
			step int
			tm   time.Time
			rep  metric.Report
			objs []float64
		}{{0, first, f.TestBefore, f.TestObjBefore}, {f.Steps, r.Hist.FinalTime, f.TestAfter, f.TestObjAfter}} {
			for i, o := range metric.Objectives() {
				add("test/objectives/"+string(o), side.step, side.tm, side.objs[i])
			}
			report("test/", side.step, side.tm, record.ReportData{
				MeanRecall: record.Num(side.rep.MeanRecall), MinRecall: record.Num(side.rep.MinRecall), HMean: record.Num(side.rep.HMean),
				GMean: record.Num(side.rep.GMean), MinCoverage: record.Num(side.rep.MinCoverage), Accuracy: record.Num(side.rep.Accuracy),
				HeadRecall: record.Num(side.rep.HeadRecall), TailRecall: record.Num(side.rep.TailRecall), MinHTRecall: record.Num(side.rep.MinHTRecall),
				HeadCoverage: record.Num(side.rep.HeadCoverage), TailCoverage: record.Num(side.rep.TailCoverage), MinHTCoverage: record.Num(side.rep.MinHTCoverage),
			})
			for c := range side.rep.Recall {
				add("test/recall/"+class(c), side.step, side.tm, side.rep.Recall[c])
				add("test/coverage/"+class(c), side.step, side.tm, side.rep.Coverage[c])
			}
		}
		if len(got) != len(want) {
			var extra, missing []string
			for k := range got {
				if _, ok := want[k]; !ok {
					extra = append(extra, k)
				}
			}
			for k := range want {
				if _, ok := got[k]; !ok {
					missing = append(missing, k)
				}
			}
			t.Errorf("%s: %d series, want %d; extra %q, missing %q", r.Meta.Name, len(got), len(want), extra, missing)
		}
		for tag, w := range want {
			g := got[tag]
			if !slices.EqualFunc(g, w, func(a, b point) bool {
				return a.step == b.step && math.Abs(a.wall-b.wall) < 1e-6 && (a.v == b.v || a.v != a.v && b.v != b.v)
			}) {
				t.Errorf("%s %s:\n got %v\nwant %v", r.Meta.Name, tag, g, w)
			}
		}
		if len(want["lambda/6_Shirt"]) == 0 && r.Meta.Name == "viz-selmix" {
			t.Errorf("the SelMix run has no per-class multipliers")
		}
	}
}

// G and P are PNG images at the refreshes that kept them; the config is
// a text summary holding config.toml; tags and note are text too; the
// file starts with its version.
func TestImagesAndText(t *testing.T) {
	out := t.TempDir()
	r := loadRun(t, vizRuns, "viz-selmix")
	r.Meta.Tags, r.Meta.Note = []string{"paper"}, "a note"
	if _, err := Export(out, []export.Recorded{r}); err != nil {
		t.Fatal(err)
	}
	evs := readEvents(t, runFile(t, out, r))
	if evs[0].GetFileVersion() != "brain.Event:2" {
		t.Errorf("first event %v, want the file version", evs[0])
	}
	var imageSteps []int
	texts := map[string]string{}
	for _, ev := range evs {
		for _, v := range ev.GetSummary().GetValue() {
			switch x := v.Value.(type) {
			case *tbpb.Summary_Value_Image:
				if v.Tag == "matrices/G" {
					imageSteps = append(imageSteps, int(ev.Step))
				}
				img, err := png.Decode(bytes.NewReader(x.Image.EncodedImageString))
				if err != nil {
					t.Fatalf("%s at %d: %v", v.Tag, ev.Step, err)
				}
				if sz := img.Bounds().Size(); sz.X != int(x.Image.Width) || sz.Y != int(x.Image.Height) || sz.X != matrixpng.Side(10) {
					t.Errorf("%s: image %v, header %dx%d", v.Tag, sz, x.Image.Width, x.Image.Height)
				}
			case *tbpb.Summary_Value_Tensor:
				if v.GetMetadata().GetPluginData().GetPluginName() == "text" {
					if x.Tensor.Dtype != tbpb.DataType_DT_STRING || len(x.Tensor.StringVal) != 1 {
						t.Errorf("%s: tensor %v", v.Tag, x.Tensor)
					}
					texts[v.Tag] = string(x.Tensor.StringVal[0])
				}
			}
		}
	}
	var want []int
	for i := range r.Hist.Refreshes {
		if r.Hist.HasMatrices(i) {
			want = append(want, r.Hist.Refreshes[i].Step)
		}
	}
	if !slices.Equal(imageSteps, want) || len(want) == 0 {
		t.Errorf("G images at steps %v, matrices kept at %v", imageSteps, want)
	}
	if texts["config"] != "```toml\n"+strings.TrimRight(r.ConfigText, "\n")+"\n```" || texts["run/tags"] != "paper" || texts["run/note"] != "a note" {
		t.Errorf("texts %q", texts)
	}
}

// hparamsData finds the HParams plugin data under tag in an event file.
func hparamsData(t *testing.T, evs []*tbpb.Event, tag string) *hparamspb.HParamsPluginData {
	t.Helper()
	for _, ev := range evs {
		for _, v := range ev.GetSummary().GetValue() {
			if v.Tag != tag {
				continue
			}
			if v.GetMetadata().GetPluginData().GetPluginName() != "hparams" {
				t.Fatalf("%s: plugin %q", tag, v.GetMetadata().GetPluginData().GetPluginName())
			}
			var d hparamspb.HParamsPluginData
			if err := proto.Unmarshal(v.GetMetadata().GetPluginData().GetContent(), &d); err != nil {
				t.Fatal(err)
			}
			if d.Version != 0 {
				t.Errorf("%s: plugin data version %d, want 0", tag, d.Version)
			}
			return &d
		}
	}
	t.Fatalf("no %s", tag)
	return nil
}

// Each run is an HParams session holding its config and tags, ended
// successfully; the experiment in the output directory knows every
// hyperparameter with the values the runs took, and the metrics —
// including those of a run exported earlier on its own.
func TestHParams(t *testing.T) {
	out := t.TempDir()
	sel := exportRuns(t, out, "viz-selmix")[0]
	uni := exportRuns(t, out, "viz-uniform")[0]
	for _, r := range []export.Recorded{sel, uni} {
		evs := readEvents(t, runFile(t, out, r))
		start := hparamsData(t, evs, TagSessionStart).GetSessionStartInfo()
		policy := start.GetHparams()["finetune.policy"].GetStringValue()
		steps := start.GetHparams()["finetune.steps"].GetNumberValue()
		if want := r.Hist.Refreshes[0].Hyper.Policy; policy != string(want) || steps != 200 {
			t.Errorf("%s: session policy %q steps %v, want %q 200", r.Meta.Name, policy, steps, want)
		}
		end := hparamsData(t, evs, TagSessionEnd).GetSessionEndInfo()
		if end.GetStatus() != hparamspb.Status_STATUS_SUCCESS || math.Abs(end.EndTimeSecs-wall(r.Hist.FinalTime)) > 1e-6 {
			t.Errorf("%s: session end %v", r.Meta.Name, end)
		}
	}
	exp := hparamsData(t, readEvents(t, filepath.Join(out, ExperimentFile)), TagExperiment).GetExperiment()
	infos := map[string]*hparamspb.HParamInfo{}
	for _, h := range exp.HparamInfos {
		infos[h.Name] = h
	}
	var policies []string
	for _, v := range infos["finetune.policy"].GetDomainDiscrete().GetValues() {
		policies = append(policies, v.GetStringValue())
	}
	if !slices.Equal(policies, []string{"selmix", "uniform"}) || infos["finetune.policy"].Type != hparamspb.DataType_DATA_TYPE_STRING {
		t.Errorf("experiment: finetune.policy %v", infos["finetune.policy"])
	}
	if iv := infos["finetune.steps"].GetDomainInterval(); iv == nil || iv.MinValue != 200 || iv.MaxValue != 200 {
		t.Errorf("experiment: finetune.steps %v", infos["finetune.steps"])
	}
	var metrics []string
	for _, m := range exp.MetricInfos {
		metrics = append(metrics, m.Name.Tag)
	}
	for _, m := range []string{"psi", "objectives/min-recall", "metrics/mean_recall", "test/metrics/min_recall"} {
		if !slices.Contains(metrics, m) {
			t.Errorf("experiment metrics %q lack %q", metrics, m)
		}
	}
}

// renamed copies the fixture run from (a name or id) into root as a run
// with the given id and name, and loads it.
func renamed(t *testing.T, root, from, id, name string) export.Recorded {
	t.Helper()
	src, err := runs.Open(vizRuns, from)
	if err != nil {
		t.Fatal(err)
	}
	runstest.Copy(t, src.Dir, filepath.Join(root, id), func(file string, b []byte) []byte {
		if file != "run.json" {
			return b
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		m["id"], m["name"] = id, name
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
	return loadRun(t, root, id)
}

// tree lists the files under out (but the experiment), each with the
// run id its session start names, as "folder/file id".
func tree(t *testing.T, out string) []string {
	t.Helper()
	var got []string
	files, _ := filepath.Glob(filepath.Join(out, "*", "*"))
	for _, f := range files {
		rel, _ := filepath.Rel(out, f)
		start := hparamsData(t, readEvents(t, f), TagSessionStart).GetSessionStartInfo()
		got = append(got, filepath.ToSlash(rel)+" "+filepath.Base(start.ModelUri))
	}
	dirs, _ := os.ReadDir(out)
	for _, d := range dirs {
		if ents, _ := os.ReadDir(filepath.Join(out, d.Name())); d.IsDir() && len(ents) == 0 {
			got = append(got, d.Name()+"/ empty")
		}
	}
	slices.Sort(got)
	return got
}

// sessionNames are the runs the experiment in out lists.
func sessionNames(t *testing.T, out string) string {
	t.Helper()
	return hparamsData(t, readEvents(t, filepath.Join(out, ExperimentFile)), TagExperiment).GetExperiment().GetDescription()
}

// A run's folder is its name; two runs of the same name have their ids
// appended, a run alone with its name has not. Exporting again, all of
// them or some, changes nothing; an export of before (folders by id) is
// moved to names for the runs exported again and kept for the others,
// so no run is lost or in two folders.
func TestFolders(t *testing.T) {
	root := t.TempDir()
	const (
		idA = "20261126-1000-aaaa"
		idB = "20261126-1001-bbbb"
		idC = "20261126-1002-cccc"
	)
	a := renamed(t, root, "viz-uniform", idA, "base")
	b := renamed(t, root, "viz-selmix", idB, "base")
	c := renamed(t, root, "viz-uniform", idC, "lr=0.1 s/2")
	file := func(r export.Recorded) string {
		created, _ := time.Parse(time.RFC3339, r.Meta.Created)
		return RunFile(created)
	}
	fa, fb, fc := file(a), file(b), file(c)
	byName := []string{
		"base_" + idA + "/" + fa + " " + idA,
		"base_" + idB + "/" + fb + " " + idB,
		"lr=0.1_s_2/" + fc + " " + idC,
	}
	byID := []string{idA + "/" + fa + " " + idA, idB + "/" + fb + " " + idB, idC + "/" + fc + " " + idC}
	write := func(out string, rs ...export.Recorded) {
		t.Helper()
		if _, err := Export(out, rs); err != nil {
			t.Fatal(err)
		}
	}
	check := func(what, out string, want []string, sessions string) {
		t.Helper()
		if got := tree(t, out); !slices.Equal(got, want) {
			t.Errorf("%s: files\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if got := sessionNames(t, out); got != "selmix runs "+sessions {
			t.Errorf("%s: experiment %q, want the runs %s", what, got, sessions)
		}
	}
	all := "base_" + idA + ", base_" + idB + ", lr=0.1_s_2"

	out := t.TempDir()
	write(out, a, b, c)
	check("first export", out, byName, all)
	before, _ := os.ReadFile(filepath.Join(out, "base_"+idB, fb))
	write(out, a, b, c)
	check("the same again", out, byName, all)
	if after, _ := os.ReadFile(filepath.Join(out, "base_"+idB, fb)); !bytes.Equal(before, after) {
		t.Error("the same again: the event file changed")
	}
	write(out, a)
	write(out, c)
	check("one at a time", out, byName, all)

	// Runs exported one at a time: the second of a name finds the first.
	out = t.TempDir()
	write(out, a)
	check("A alone", out, []string{"base/" + fa + " " + idA}, "base")
	write(out, b)
	check("then B", out, []string{"base/" + fa + " " + idA, "base_" + idB + "/" + fb + " " + idB}, "base, base_"+idB)
	write(out, a, b, c)
	check("then all", out, byName, all)

	// An export of before: one folder per run, named by its id.
	out = t.TempDir()
	write(out, a, b, c)
	for i, dir := range []string{"base_" + idA, "base_" + idB, "lr=0.1_s_2"} {
		if err := os.Rename(filepath.Join(out, dir), filepath.Join(out, []string{idA, idB, idC}[i])); err != nil {
			t.Fatal(err)
		}
	}
	write(out, c)
	check("C into an export by id", out, []string{byID[0], byID[1], byName[2]}, idA+", "+idB+", lr=0.1_s_2")
	write(out, a, b, c)
	check("all into an export by id", out, byName, all)

	// A folder of that name that is not an export's is left alone.
	out = t.TempDir()
	if err := os.MkdirAll(filepath.Join(out, "lr=0.1_s_2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "lr=0.1_s_2", "notes"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	write(out, c)
	if b, err := os.ReadFile(filepath.Join(out, "lr=0.1_s_2", "notes")); err != nil || string(b) != "mine" {
		t.Errorf("a folder of the user's: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(out, "lr=0.1_s_2_"+idC, fc)); err != nil {
		t.Errorf("run beside a folder of the user's: %v", err)
	}
}

func TestSafeName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"min-recall-selmix", "min-recall-selmix"},
		{"a/b\\c d", "a_b_c_d"},
		{"..", "_."},
		{".hidden", "_hidden"},
		{"x\x00\ny", "x__y"},
		{"échelle-λ=0.5,s@2+", "échelle-λ=0.5,s@2+"},
		{strings.Repeat("λ", 60), strings.Repeat("λ", 50)},
		{"", ""},
	} {
		if got := SafeName(tc.in); got != tc.want {
			t.Errorf("SafeName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Above MaxClassScalars classes, the per-class scalars are the Extremes
// worst and best classes at the last refresh, and a histogram holds all.
func TestManyClasses(t *testing.T) {
	const K = 150
	last := map[string][]float64{"recall": make([]float64, K)}
	for c := range K {
		last["recall"][c] = float64((c*37)%K) / K
	}
	last["recall"][5] = math.NaN()
	p := newClassPicker(K, nil, last)
	var kept []int
	for c := range K {
		if p.keeps("recall", c) {
			kept = append(kept, c)
		}
	}
	if len(kept) != 2*Extremes || !p.keeps("recall", 5) {
		t.Fatalf("kept %d classes (%v), want %d including the NaN one", len(kept), kept, 2*Extremes)
	}
	for _, c := range kept {
		v := last["recall"][c]
		if c != 5 && v >= float64(Extremes-1)/K && v < float64(K-Extremes)/K {
			t.Errorf("class %d with recall %v kept: neither among the worst nor the best", c, v)
		}
	}
	h := Histogram([]float64{0, 0.05, 0.051, 1, 2, math.NaN(), -1})
	if h.Num != 6 || h.Bucket[0] != 3 || h.Bucket[1] != 1 || h.Bucket[HistogramBins-1] != 2 || h.Min != -1 || h.Max != 2 || h.Sum != 2.101 {
		t.Errorf("histogram %v", h)
	}
}

// The event file of the uniform run, dumped as text: what a change of
// the writer changes (go test -run TestGolden -update rewrites it).
func TestGolden(t *testing.T) {
	out := t.TempDir()
	r := exportRuns(t, out, "viz-uniform")[0]
	var b strings.Builder
	for _, path := range []string{runFile(t, out, r), filepath.Join(out, ExperimentFile)} {
		fmt.Fprintf(&b, "# %s\n", filepath.Base(path))
		for _, ev := range readEvents(t, path) {
			if fv := ev.GetFileVersion(); fv != "" {
				fmt.Fprintf(&b, "%d %.6f file_version %s\n", ev.Step, ev.WallTime, fv)
			}
			for _, v := range ev.GetSummary().GetValue() {
				if _, scalar := v.Value.(*tbpb.Summary_Value_SimpleValue); scalar && ev.Step != 0 && ev.Step != 200 {
					continue // the first and last refresh show every scalar
				}
				fmt.Fprintf(&b, "%d %.6f %s ", ev.Step, ev.WallTime, v.Tag)
				switch x := v.Value.(type) {
				case *tbpb.Summary_Value_SimpleValue:
					fmt.Fprintf(&b, "%.7g\n", x.SimpleValue)
				case *tbpb.Summary_Value_Image:
					fmt.Fprintf(&b, "image %dx%d\n", x.Image.Width, x.Image.Height)
				case *tbpb.Summary_Value_Tensor:
					d := v.GetMetadata().GetPluginData()
					if d.GetPluginName() == "text" {
						fmt.Fprintf(&b, "text %d bytes\n", len(x.Tensor.StringVal[0]))
						continue
					}
					fmt.Fprintf(&b, "%s\n", dumpHParams(t, d.GetContent()))
				default:
					fmt.Fprintf(&b, "%T\n", x)
				}
			}
		}
	}
	golden.RequireEqual(t, b.String())
}

// dumpHParams is HParams plugin data as text: sorted, one item a line.
func dumpHParams(t *testing.T, content []byte) string {
	var d hparamspb.HParamsPluginData
	if err := proto.Unmarshal(content, &d); err != nil {
		t.Fatal(err)
	}
	var lines []string
	switch {
	case d.GetSessionStartInfo() != nil:
		s := d.GetSessionStartInfo()
		lines = append(lines, fmt.Sprintf("session start %.0f model %s", s.StartTimeSecs, filepath.Base(s.ModelUri)))
		for _, k := range slices.Sorted(maps.Keys(s.Hparams)) {
			lines = append(lines, fmt.Sprintf("  %s = %v", k, s.Hparams[k].AsInterface()))
		}
	case d.GetSessionEndInfo() != nil:
		e := d.GetSessionEndInfo()
		lines = append(lines, fmt.Sprintf("session end %v %.6f", e.Status, e.EndTimeSecs))
	case d.GetExperiment() != nil:
		e := d.GetExperiment()
		lines = append(lines, fmt.Sprintf("experiment %q %.0f", e.Description, e.TimeCreatedSecs))
		for _, h := range e.HparamInfos {
			dom := fmt.Sprintf("%q", h.GetDomainDiscrete().AsSlice())
			if iv := h.GetDomainInterval(); iv != nil {
				dom = fmt.Sprintf("[%v, %v]", iv.MinValue, iv.MaxValue)
			}
			lines = append(lines, fmt.Sprintf("  hparam %s %v %s", h.Name, h.Type, dom))
		}
		for _, m := range e.MetricInfos {
			lines = append(lines, fmt.Sprintf("  metric %s %v", m.Name.Tag, m.DatasetType))
		}
	}
	return strings.Join(lines, "\n")
}

// TensorBoard's own event reader loads what was written, where
// /usr/bin/python3 has tensorboard (skipped otherwise): the scalars of ψ
// are the run's, and the HParams session and experiment are found.
func TestTensorBoardReads(t *testing.T) {
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import tensorboard.backend.event_processing.event_accumulator").Run(); err != nil {
		t.Skipf("%s cannot import tensorboard: %v", py, err)
	}
	out := t.TempDir()
	r := exportRuns(t, out, "viz-selmix")[0]
	script := `
import json, sys
from tensorboard.backend.event_processing import event_accumulator as ea
run = ea.EventAccumulator(sys.argv[1], size_guidance={ea.SCALARS: 0, ea.IMAGES: 0})
run.Reload()
root = ea.EventAccumulator(sys.argv[2])
root.Reload()
print(json.dumps({
    "psi": [[s.step, s.value] for s in run.Scalars("psi")],
    "images": len(run.Images("matrices/G")),
    "session": sorted(run.PluginTagToContent("hparams")),
    "experiment": sorted(root.PluginTagToContent("hparams")),
}))
`
	b, err := exec.Command(py, "-c", script, filepath.Join(out, r.Meta.Name), out).Output()
	if err != nil {
		t.Fatalf("tensorboard's reader: %v", err)
	}
	var got struct {
		Psi        [][2]float64
		Images     int
		Session    []string
		Experiment []string
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if len(got.Psi) != len(r.Hist.Refreshes) || got.Images == 0 {
		t.Fatalf("tensorboard read %d ψ values and %d G images; the run has %d refreshes", len(got.Psi), got.Images, len(r.Hist.Refreshes))
	}
	for i, p := range got.Psi {
		rf := r.Hist.Refreshes[i]
		if int(p[0]) != rf.Step || float32(p[1]) != float32(rf.Stats.Psi) {
			t.Errorf("ψ %d: tensorboard read %v, the run has %v at %d", i, p, rf.Stats.Psi, rf.Step)
		}
	}
	if !slices.Equal(got.Session, []string{TagSessionEnd, TagSessionStart}) || !slices.Equal(got.Experiment, []string{TagExperiment}) {
		t.Errorf("hparams tags: run %q, root %q", got.Session, got.Experiment)
	}
}

// BenchmarkExport: the event file of the SelMix fixture run (K = 10, 11
// refreshes, G and P at each).
func BenchmarkExport(b *testing.B) {
	r, err := runs.Open(vizRuns, "viz-selmix")
	if err != nil {
		b.Fatal(err)
	}
	out := b.TempDir()
	for b.Loop() {
		run, err := export.Load(r)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Export(out, []export.Recorded{run}); err != nil {
			b.Fatal(err)
		}
	}
}

// Runs whose names differ only in case get folders that differ ignoring
// case too: on a file system that ignores case (macOS, Windows) "Same"
// and "SAME" would be one folder holding both runs.
func TestFoldersIgnoreCase(t *testing.T) {
	root := t.TempDir()
	const (
		idA = "20261126-1000-aaaa"
		idB = "20261126-1001-bbbb"
		idC = "20261126-1002-cccc"
	)
	a := renamed(t, root, "viz-uniform", idA, "Same")
	b := renamed(t, root, "viz-selmix", idB, "SAME")
	c := renamed(t, root, "viz-uniform", idC, "Straße")
	got := folders(t.TempDir(), []export.Recorded{a, b, c}, nil)
	want := []string{"Same_" + idA, "SAME_" + idB, "Straße"}
	if !slices.Equal(got, want) {
		t.Errorf("folders %q, want %q", got, want)
	}
	seen := map[string]bool{}
	for _, f := range got {
		if seen[strings.ToLower(f)] {
			t.Errorf("folders %q: two equal ignoring case", got)
		}
		seen[strings.ToLower(f)] = true
	}
	// Exported one at a time, the second finds the first's folder.
	out := t.TempDir()
	if _, err := Export(out, []export.Recorded{a}); err != nil {
		t.Fatal(err)
	}
	if _, err := Export(out, []export.Recorded{b}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "SAME_"+idB)); err != nil {
		t.Errorf("SAME exported after Same: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "SAME")); err == nil {
		t.Errorf("SAME exported after Same into a folder of its bare name")
	}
}

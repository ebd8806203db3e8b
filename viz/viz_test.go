package viz

import (
	"bytes"
	"flag"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot/cmpimg"

	"selmix/runs"
)

var update = flag.Bool("update", false, "rewrite the golden figures and CSVs in testdata/")

// fixture loads one of the small runs in testdata/run by name.
func fixture(t *testing.T, name string) *RunData { t.Helper(); return fixtureIn(t, "run", name) }

// fixtureIn loads the run name from the runs root testdata/root.
func fixtureIn(t *testing.T, root, name string) *RunData {
	t.Helper()
	run, err := runs.Open(filepath.Join("testdata", root), name)
	if err != nil {
		t.Fatal(err)
	}
	r, err := FromRun(run)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// goldenOpts draws small PNGs: enough pixels to catch a moved line or
// label, few enough to keep testdata small.
var goldenOpts = Options{Format: "png", DPI: 60}

func TestGoldenRun(t *testing.T) {
	r := fixture(t, "viz-selmix")
	dir := t.TempDir()
	res, err := Export(r, dir, goldenOpts)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(res.Files), len(FigureNames()); got != want {
		t.Fatalf("wrote %d figures, want %d (notes %v)", got, want, res.Notes)
	}
	for _, f := range res.Files {
		checkGolden(t, dir, "TestGoldenRun", f)
	}
}

func TestGoldenCompare(t *testing.T) {
	rs := []*RunData{fixture(t, "viz-selmix"), fixture(t, "viz-uniform")}
	dir := t.TempDir()
	res, err := Compare(rs, DefaultCompareMetric(rs), dir, goldenOpts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 2 {
		t.Fatalf("wrote %v, want compare-psi_min-recall and compare-final", res.Files)
	}
	for _, f := range res.Files {
		checkGolden(t, dir, "TestGoldenCompare", f)
	}
}

// checkGolden compares a written figure (pixels, with a tolerance) and its
// CSV (exactly) with testdata/<test>/, or rewrites them with -update.
func checkGolden(t *testing.T, dir, test string, f File) {
	t.Helper()
	gdir := filepath.Join("testdata", test)
	for _, name := range []string{f.Name, f.CSV} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join(gdir, name)
		if *update {
			if err := os.MkdirAll(gdir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if strings.HasSuffix(name, ".png") {
			if msg := samePNG(got, want); msg != "" {
				failed := filepath.Join(os.TempDir(), "selmix-viz-"+test+"-"+name)
				os.WriteFile(failed, got, 0o644)
				if diff, _, _ := pngDiff(got, want); diff != nil {
					var buf bytes.Buffer
					png.Encode(&buf, diff)
					os.WriteFile(strings.TrimSuffix(failed, ".png")+"-diff.png", buf.Bytes(), 0o644)
				}
				t.Errorf("%s differs from %s: %s (got written to %s, the difference beside it; -update accepts it)", name, golden, msg, failed)
			}
		} else if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s:\n got: %.400s\nwant: %.400s", name, golden, got, want)
		}
	}
}

// pngDelta is cmpimg's normalised tolerance for the golden PNGs (0: the
// same pixels; 1: anything): anti-aliasing noise passes, a moved line or
// label does not (TestSamePNGCatchesChanges).
const pngDelta = 0.1

// samePNG returns "" if two PNGs match within pngDelta (gonum/plot's
// cmpimg, as plot's own golden tests compare them), else why not.
func samePNG(got, want []byte) string {
	ok, err := cmpimg.EqualApprox("png", got, want, pngDelta)
	switch {
	case err != nil:
		return err.Error()
	case ok:
		return ""
	}
	diff, n, msg := pngDiff(got, want)
	if msg != "" {
		return msg
	}
	b := diff.Bounds()
	return fmt.Sprintf("%d of %d pixels differ", n, b.Dx()*b.Dy())
}

// pngDiff is cmpimg's intensity-scaled difference of two PNGs and the
// number of pixels that differ at all; msg says why there is none.
func pngDiff(got, want []byte) (diff *image.RGBA, n int, msg string) {
	a, err := png.Decode(bytes.NewReader(got))
	if err != nil {
		return nil, 0, "got: " + err.Error()
	}
	b, err := png.Decode(bytes.NewReader(want))
	if err != nil {
		return nil, 0, "golden: " + err.Error()
	}
	if a.Bounds() != b.Bounds() {
		return nil, 0, fmt.Sprintf("size %v, want %v", a.Bounds().Size(), b.Bounds().Size())
	}
	diff = image.NewRGBA(a.Bounds())
	cmpimg.Diff(diff, a, b)
	for i := 0; i < len(diff.Pix); i += 4 {
		if diff.Pix[i] != 0 || diff.Pix[i+1] != 0 || diff.Pix[i+2] != 0 {
			n++
		}
	}
	return diff, n, ""
}

// The comparison must catch a real change: a figure drawn with a line
// moved (here: another run's data) is not within tolerance.
func TestSamePNGCatchesChanges(t *testing.T) {
	f := newFigure(goldenOpts, colWidth, 2*72)
	draw := func(r *RunData) []byte {
		d, err := sFigure(f, r)
		if err != nil {
			t.Fatal(err)
		}
		b, err := f.render(d.draw)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b := draw(fixture(t, "viz-selmix")), draw(fixture(t, "viz-uniform"))
	if msg := samePNG(a, a); msg != "" {
		t.Errorf("an image differs from itself: %s", msg)
	}
	if msg := samePNG(a, b); msg == "" {
		t.Error("figures of different runs compare equal")
	}
}

// Format-1 runs draw as before: testdata/run-v1 holds two runs in format
// 1 (which has G and P as float64), and their figures match the goldens
// in testdata/TestGoldenFormat1, drawn from the same runs upgraded to
// format 2 — CSVs value for value once G and P are rounded to float32.
// (testdata/run has since been recorded anew, with the predicted and
// realised change of ψ that format 1 never had.)
func TestGoldenFormat1(t *testing.T) {
	for _, name := range []string{"viz-selmix", "viz-uniform"} {
		v1 := fixtureIn(t, "run-v1", name)
		if v1.Hist.Format != 1 {
			t.Fatalf("%s: testdata/run-v1 holds format %d", name, v1.Hist.Format)
		}
		dir := t.TempDir()
		res, err := Export(v1, dir, goldenOpts)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(res.Files), len(FigureNames())-1; got != want {
			t.Errorf("%s: wrote %d figures, want %d (all but linear)", name, got, want)
		}
		for _, f := range res.Files {
			if f.CSV == "gain.csv" || f.CSV == "mixup.csv" {
				p := filepath.Join(dir, f.CSV)
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, roundValues(t, b), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			checkGolden(t, dir, filepath.Join("TestGoldenFormat1", name), f)
		}
	}
}

// roundValues rounds the value column (the last but one) of a CSV to
// float32, as format 2 stores G and P, and writes it as the figures do.
func roundValues(t *testing.T, b []byte) []byte {
	lines := strings.Split(string(b), "\n")
	for i, l := range lines[1:] {
		f := strings.Split(l, ",")
		if len(f) < 2 {
			continue
		}
		v, err := strconv.ParseFloat(f[len(f)-2], 64)
		if err != nil {
			t.Fatalf("line %d: %v", i+2, err)
		}
		f[len(f)-2] = formatValue(decimal32(float64(float32(v))))
		lines[i+1] = strings.Join(f, ",")
	}
	return []byte(strings.Join(lines, "\n"))
}

func TestGroupStats(t *testing.T) {
	a, b := fixture(t, "viz-selmix"), fixture(t, "viz-uniform")
	m := DefaultCompareMetric([]*RunData{a, b})
	st := Group{"both", []*RunData{a, b}}.Stats(m)
	if len(st.Steps) == 0 {
		t.Fatal("no steps")
	}
	for k, x := range st.Steps {
		var vals []float64
		for _, r := range []*RunData{a, b} {
			for i := range r.Hist.Refreshes {
				if float64(r.Hist.Refreshes[i].Step) == x {
					vals = append(vals, m.get(&r.Hist.Refreshes[i]))
				}
			}
		}
		if len(vals) != 2 {
			continue // a step only one run refreshed at: the other is interpolated
		}
		mu, sd := (vals[0]+vals[1])/2, math.Abs(vals[0]-vals[1])/math.Sqrt2
		if st.N[k] != 2 || math.Abs(st.Mean[k]-mu) > 1e-12 || math.Abs(st.Std[k]-sd) > 1e-12 {
			t.Errorf("step %v: mean %v std %v over %d, want %v %v over 2", x, st.Mean[k], st.Std[k], st.N[k], mu, sd)
		}
	}
	one := Group{"one", []*RunData{a}}.Stats(m)
	for k := range one.Steps {
		if one.Std[k] != 0 || one.N[k] != 1 || one.Mean[k] != m.get(&a.Hist.Refreshes[k]) {
			t.Fatalf("one member at step %v: mean %v std %v n %d, want its own value, 0, 1", one.Steps[k], one.Mean[k], one.Std[k], one.N[k])
		}
	}
}

func TestGoldenCompareGroups(t *testing.T) {
	a, b := fixture(t, "viz-selmix"), fixture(t, "viz-uniform")
	dir := t.TempDir()
	groups := []Group{{"both", []*RunData{a, b}}, {"selmix", []*RunData{a}}}
	res, err := CompareGroups(groups, "finetune.policy", DefaultCompareMetric([]*RunData{a, b}), dir, goldenOpts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 2 || res.Files[0].Name != "compare-psi_min-recall-by-finetune.policy.png" || res.Files[1].Name != "compare-final-by-finetune.policy.png" {
		t.Fatalf("wrote %v, want compare-psi_min-recall-by-finetune.policy.png and compare-final-by-finetune.policy.png", res.Files)
	}
	for _, f := range res.Files {
		checkGolden(t, dir, "TestGoldenCompareGroups", f)
	}
}

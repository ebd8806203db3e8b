package viz

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
)

// A PDF figure's text reads as the figure says it: ψ, α and · survive
// (gonum's vgpdf wrote them in cp1252, which pdftotext read as "Ïˆ",
// "Î±" and "Â·"). pdftotext (Debian's poppler-utils) is installed by
// .ci/run.
func TestPDFText(t *testing.T) {
	if _, err := exec.LookPath("pdftotext"); err != nil {
		t.Fatal("pdftotext not found: install poppler-utils (.ci/run does)")
	}
	dir := t.TempDir()
	res, err := Export(fixture(t, "viz-selmix"), dir, Options{Format: "pdf"})
	if err != nil {
		t.Fatal(err)
	}
	text := map[string]string{}
	for _, f := range res.Files {
		out, err := exec.Command("pdftotext", "-enc", "UTF-8", filepath.Join(dir, f.Name), "-").Output()
		if err != nil {
			t.Fatalf("pdftotext %s: %v", f.Name, err)
		}
		text[f.Name] = string(out)
	}
	for _, c := range []struct{ file, want string }{
		{"metrics.pdf", "ψ min-recall (optimized)"},
		{"per-class.pdf", "coverage bound α/K"},
		{"linear.pdf", "predicted by G·P"},
		{"s.pdf", "softmax(s·G)"},
	} {
		if !strings.Contains(text[c.file], c.want) {
			t.Errorf("%s: text lacks %q:\n%s", c.file, c.want, text[c.file])
		}
	}
	for name, s := range text {
		for _, bad := range []string{"Ïˆ", "Î±", "Â·"} {
			if strings.Contains(s, bad) {
				t.Errorf("%s: garbled %q in its text", name, bad)
			}
		}
	}
	// A real PDF, not an empty page.
	b, err := os.ReadFile(filepath.Join(dir, "metrics.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "%PDF-") {
		t.Errorf("metrics.pdf starts %q", b[:min(len(b), 8)])
	}
}

// The true worst recall and ψ min-recall carry different names and
// titles; "min-recall" and "worst-recall", the worst recall's old names,
// still find it (metric.LookupScalar).
func TestWorstRecallIsNotPsi(t *testing.T) {
	w, err := ParseMetric("min_recall")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"min-recall", "worst-recall"} {
		old, err := ParseMetric(name)
		if err != nil || old.Name != "min_recall" {
			t.Errorf("ParseMetric(%s) = %q, %v; want min_recall", name, old.Name, err)
		}
	}
	psi, err := ParseMetric("psi:min-recall")
	if err != nil {
		t.Fatal(err)
	}
	if w.Title != "worst recall (min over classes)" || psi.Title != "ψ min-recall" {
		t.Errorf("titles %q and %q, want worst recall (min over classes) and ψ min-recall", w.Title, psi.Title)
	}
}

// An SVG names its fonts rather than embedding them (an embedded
// Liberation Serif made every SVG ~530 KB), with Times New Roman, whose
// glyph widths Liberation Serif shares, as the fallback.
func TestSVGSize(t *testing.T) {
	dir := t.TempDir()
	res, err := Export(fixture(t, "viz-selmix"), dir, Options{Format: "svg"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Files {
		b, err := os.ReadFile(filepath.Join(dir, f.Name))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 100<<10 {
			t.Errorf("%s: %d KB, want ≤ 100 KB", f.Name, len(b)>>10)
		}
		s := string(b)
		if strings.Contains(s, "@font-face") || !strings.Contains(s, `font-family:'Liberation Serif','Times New Roman',Times,serif;`) || strings.Contains(s, "font-family:Liberation Serif;") {
			t.Errorf("%s: fonts embedded, or no fallback family", f.Name)
		}
	}
}

// At 3.5x2.5in, the size export --help gives as its example, every
// figure's text stays on the page, titles whole (issue 46: linear's title
// was cut at both ends, "f ψ mean-recall@cov per refresh interval: … wrong
// sign in 7").
func TestSmallFiguresStayOnThePage(t *testing.T) {
	if _, err := exec.LookPath("pdftotext"); err != nil {
		t.Fatal("pdftotext not found: install poppler-utils (.ci/run does)")
	}
	dir := t.TempDir()
	o := Options{Format: "pdf", Width: 3.5 * vg.Inch, Height: 2.5 * vg.Inch}
	res, err := Export(fixture(t, "viz-selmix"), dir, o)
	if err != nil {
		t.Fatal(err)
	}
	cres, err := Compare([]*RunData{fixture(t, "viz-selmix"), fixture(t, "viz-uniform")}, ObjectiveMetric("min-recall"), dir, o)
	if err != nil {
		t.Fatal(err)
	}
	word := regexp.MustCompile(`<word xMin="([-0-9.]+)" yMin="([-0-9.]+)" xMax="([-0-9.]+)" yMax="([-0-9.]+)">([^<]*)</word>`)
	page := regexp.MustCompile(`<page width="([0-9.]+)" height="([0-9.]+)">`)
	for _, f := range append(res.Files, cres.Files...) {
		out, err := exec.Command("pdftotext", "-bbox", "-enc", "UTF-8", filepath.Join(dir, f.Name), "-").Output()
		if err != nil {
			t.Fatalf("pdftotext %s: %v", f.Name, err)
		}
		pm := page.FindStringSubmatch(string(out))
		if pm == nil {
			t.Fatalf("%s: no page in\n%s", f.Name, out)
		}
		w, _ := strconv.ParseFloat(pm[1], 64)
		h, _ := strconv.ParseFloat(pm[2], 64)
		var words []string
		for _, m := range word.FindAllStringSubmatch(string(out), -1) {
			var box [4]float64
			for i := range box {
				box[i], _ = strconv.ParseFloat(m[i+1], 64)
			}
			if box[0] < -1 || box[1] < -1 || box[2] > w+1 || box[3] > h+1 { // a rotated label's descenders may touch the edge
				t.Errorf("%s: %q at [%.1f, %.1f]–[%.1f, %.1f] leaves the %.0f×%.0f pt page", f.Name, m[5], box[0], box[1], box[2], box[3], w, h)
			}
			words = append(words, m[5])
		}
		if f.Name == "linear.pdf" && !strings.Contains(strings.Join(words, " "), "change of ψ min-recall per refresh interval: predicted by G·P (first order) and realised; wrong sign in") {
			t.Errorf("linear.pdf: the title is not whole: %q", strings.Join(words, " "))
		}
	}
}

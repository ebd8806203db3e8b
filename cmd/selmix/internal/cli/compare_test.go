package cli

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"selmix/runs/runstest"
)

// runs compare stands each run's id over its values, one value per cell,
// and five runs fit in a sane width (issue 26: ids at columns ~6/26/46,
// values at ~24/63/102, cells "final / best / min / max", 190 columns).
func TestRunsCompareLayout(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	srcs := []string{"20261123-1200-819c", "20261123-1201-c986"}
	var ids []string
	for i := range 5 {
		src := srcs[i%2]
		id := fmt.Sprintf("20261124-0900-000%d", i)
		runstest.Copy(t, filepath.Join(vizRuns, src), filepath.Join(root, id), func(name string, b []byte) []byte {
			return bytes.ReplaceAll(b, []byte(src), []byte(id))
		})
		ids = append(ids, id)
	}
	code, stdout, stderr := runCLI(append([]string{"runs", "compare", "--runs", root}, ids...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(stdout, "\n")
	head := lines[0]
	// Where each id's column ends on the header line.
	var ends []int
	for _, id := range ids {
		i := strings.Index(head, id)
		if i < 0 {
			t.Fatalf("header lacks %s: %q", id, head)
		}
		ends = append(ends, utf8.RuneCountInString(head[:i])+len(id))
	}
	rows := 0
	for _, l := range lines {
		if w := utf8.RuneCountInString(l); w > 130 {
			t.Errorf("line of %d columns: %q", w, l)
		}
		f := strings.Fields(l)
		if len(f) < 6 || !strings.HasPrefix(l, "ψ ") && !strings.HasPrefix(l, "mean_recall") {
			continue
		}
		rows++
		// The five values are the last five fields, each ending under its id.
		rs := []rune(l)
		for k, end := range ends {
			if end > len(rs) || rs[end-1] == ' ' || end < len(rs) && rs[end] != ' ' {
				t.Errorf("value %d of %q does not end at column %d under %s", k, l, end, ids[k])
			}
		}
		for _, v := range f[len(f)-5:] {
			if strings.Contains(v, "/") {
				t.Errorf("a cell packs several values: %q", l)
			}
		}
	}
	if rows < 4*10 {
		t.Errorf("%d metric rows, want mean_recall and ψ of every objective in 4 sections:\n%s", rows, stdout)
	}
	for _, want := range []string{"validation, last refresh\n", "validation, best over refreshes\n", "test, before fine-tuning\n", "test, after fine-tuning (the last step)\n", "test, at the best step (the model the run keeps)\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("no section %q", want)
		}
	}
}

// Run names a spreadsheet would run as formulas reach CSV cells quoted
// with a leading single quote (runs compare --csv, both tables of runs
// export); numbers, negative ones included, stay numbers.
func TestCSVFormulaNames(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	names := map[string]string{
		"20261123-1200-819c": `=HYPERLINK("http://evil","x")`,
		"20261123-1201-c986": "-2+3+cmd|' /C calc'!A0",
	}
	var ids []string
	for id, name := range names {
		runstest.Copy(t, filepath.Join(vizRuns, id), filepath.Join(root, id), func(file string, b []byte) []byte {
			switch file {
			case "run.json":
				q, _ := json.Marshal(name)
				return regexp.MustCompile(`"name": "[^"]*"`).ReplaceAll(b, append([]byte(`"name": `), q...))
			case "config.toml":
				return regexp.MustCompile(`(?m)^name = .*$`).ReplaceAll(b, []byte("name = "+strconv.Quote(name)))
			}
			return b
		})
		ids = append(ids, id)
	}
	out := filepath.Join(t.TempDir(), "t.csv")
	if code, _, stderr := runCLI(append([]string{"runs", "export", "--runs", root, "--csv", out}, ids...)...); code != 0 {
		t.Fatalf("runs export: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := runCLI(append([]string{"runs", "compare", "--csv", "--runs", root}, ids...)...)
	if code != 0 {
		t.Fatalf("runs compare --csv: exit %d: %s", code, stderr)
	}
	long, _ := os.ReadFile(out)
	runsTable, _ := os.ReadFile(strings.TrimSuffix(out, ".csv") + ".runs.csv")
	for what, text := range map[string]string{"compare": stdout, "long table": string(long), "runs table": string(runsTable)} {
		r := csv.NewReader(strings.NewReader(text))
		r.FieldsPerRecord = -1
		recs, err := r.ReadAll()
		if err != nil || len(recs) < 2 {
			t.Fatalf("%s: %d records, %v", what, len(recs), err)
		}
		quoted := 0
		for _, rec := range recs {
			for _, c := range rec {
				if c == "" || !strings.ContainsRune("=+-@\t\r", rune(c[0])) {
					if strings.HasPrefix(c, "'=HYPERLINK") || strings.HasPrefix(c, "'-2+3") {
						quoted++
					}
					continue
				}
				if _, err := strconv.ParseFloat(c, 64); err != nil {
					t.Errorf("%s: cell %q a spreadsheet runs as a formula", what, c)
				}
			}
		}
		if what != "long table" && quoted < 2 {
			t.Errorf("%s: %d names quoted, want both:\n%s", what, quoted, text)
		}
	}
}

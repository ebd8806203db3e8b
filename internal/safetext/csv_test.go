package safetext

import (
	"bytes"
	"encoding/csv"
	"testing"
)

// Text a spreadsheet would run as a formula is quoted; numbers, signed
// or not, stay numbers.
func TestCSVCell(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")"},
		{"+1+cmd|' /C calc'!A0", "'+1+cmd|' /C calc'!A0"},
		{"-2+3", "'-2+3"},
		{"@SUM(A1:A2)", "'@SUM(A1:A2)"},
		{"\t=1", "'\t=1"},
		{"\r=1", "'\r=1"},
		{"a=1", "a=1"},
		{"-0.5", "-0.5"},
		{"+3", "+3"},
		{"-1e-300", "-1e-300"},
		{"-1e999", "-1e999"},
		{"-inf", "-inf"},
		{"+Inf", "+Inf"},
		{"-", "'-"},
		{"-fork", "'-fork"},
	} {
		if got := CSVCell(c.in); got != c.want {
			t.Errorf("CSVCell(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestCSVWriter(t *testing.T) {
	var b bytes.Buffer
	w := NewCSV(&b)
	rec := []string{"=1+1", "-0.5", "name"}
	if err := w.WriteAll([][]string{rec, {"@x"}}); err != nil {
		t.Fatal(err)
	}
	if rec[0] != "=1+1" {
		t.Errorf("Write changed its record: %q", rec)
	}
	r := csv.NewReader(&b)
	r.FieldsPerRecord = -1
	got, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0][0] != "'=1+1" || got[0][1] != "-0.5" || got[0][2] != "name" || got[1][0] != "'@x" {
		t.Errorf("read back %q", got)
	}
}

package viz

import (
	"bytes"
	"math"
	"strconv"

	"selmix/internal/safetext"
)

// table is the CSV written beside a figure: one row per plotted value, in
// long form so any tool can pivot it, with a note saying what the figure
// did with a value it could not plot.
type table struct {
	header  []string
	rows    [][]string
	dropped int // non-finite values left out of the figure
}

func newTable(cols ...string) *table {
	return &table{header: append(cols, "note")}
}

// add appends a row whose last field is the plotted value v; notes are
// joined into the note column.
func (t *table) add(v float64, fields ...string) { t.addNoted(v, "", fields...) }

// addNoted is add with a note on the value ("wrong sign").
func (t *table) addNoted(v float64, note string, fields ...string) {
	row := append(fields, formatValue(v))
	if !finite(v) {
		if note != "" {
			note += "; "
		}
		note += "not plotted: " + formatValue(v)
		t.dropped++
	}
	t.rows = append(t.rows, append(row, note))
}

// addNote appends a row with a note and no value.
func (t *table) addNote(note string, fields ...string) {
	t.rows = append(t.rows, append(append(fields, ""), note))
}

func (t *table) bytes() []byte {
	var buf bytes.Buffer
	w := safetext.NewCSV(&buf)
	w.Write(t.header)
	w.WriteAll(t.rows) // flushes; a bytes.Buffer cannot fail
	return buf.Bytes()
}

func formatValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func itoa(i int) string { return strconv.Itoa(i) }

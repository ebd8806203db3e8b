package safetext

import (
	"encoding/csv"
	"errors"
	"io"
	"strconv"
)

// CSVCell makes s safe as a cell of a CSV file a spreadsheet may open:
// text beginning with '=', '+', '-', '@', a tab or a carriage return,
// which a spreadsheet would run as a formula, gets a single quote in
// front (as OWASP advises against CSV injection). A number ("-0.5",
// "+Inf", "-inf", "1e-3") is left as it is: it is read as a number, not
// a formula.
func CSVCell(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r':
	default:
		return s
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		return s
	}
	return "'" + s
}

// CSVWriter is the csv.Writer of every CSV table selmix writes: each
// field of a record goes through CSVCell.
type CSVWriter struct {
	*csv.Writer
	rec []string
}

// NewCSV returns a CSVWriter writing to w.
func NewCSV(w io.Writer) *CSVWriter { return &CSVWriter{Writer: csv.NewWriter(w)} }

// Write writes one record, each field made safe by CSVCell; rec is not
// changed.
func (c *CSVWriter) Write(rec []string) error {
	c.rec = c.rec[:0]
	for _, f := range rec {
		c.rec = append(c.rec, CSVCell(f))
	}
	return c.Writer.Write(c.rec)
}

// WriteAll writes records (Write) and flushes.
func (c *CSVWriter) WriteAll(records [][]string) error {
	for _, r := range records {
		if err := c.Write(r); err != nil {
			return err
		}
	}
	c.Flush()
	return c.Error()
}

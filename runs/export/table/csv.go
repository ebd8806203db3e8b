package table

import (
	"io"
	"strconv"

	"selmix/internal/atomicfile"
	"selmix/internal/safetext"
	"selmix/runs/export"
)

// WriteCSV writes the long table of rs to path and the runs table to
// RunsPath(path), each atomically, and returns the runs table's path. A
// path that is not a file (atomicfile.Out: "-" for stdout, a device, a
// pipe) gets the long table only, and the runs path returned is "".
// Cells of the long table: class (the index) and class_name (the run's
// name of it, empty where it names none) are empty for a metric that is
// not per class; values as FormatFloat writes them. Cells of the runs table are
// empty where a run has no value.
func WriteCSV(path string, stdout io.Writer, rs []export.Recorded) (string, error) {
	beside := atomicfile.OutIsFile(path)
	err := atomicfile.Out(path, stdout, func(w io.Writer) error {
		cw := safetext.NewCSV(w)
		if err := cw.Write(LongColumns); err != nil {
			return err
		}
		rec := make([]string, len(LongColumns))
		for _, r := range rs {
			names := export.Classes(r.Hist)
			for p := range export.Points(r.Hist) {
				rec[0], rec[1], rec[2], rec[3] = r.Meta.ID, strconv.Itoa(p.Step), p.Split, p.Metric
				rec[4], rec[5] = "", ""
				if p.Class >= 0 {
					rec[4] = strconv.Itoa(p.Class)
					if p.Class < len(names) {
						rec[5] = names[p.Class]
					}
				}
				rec[6] = export.FormatFloat(p.Value)
				if err := cw.Write(rec); err != nil {
					return err
				}
			}
		}
		cw.Flush()
		return cw.Error()
	})
	if err != nil || !beside {
		return "", err
	}
	runsPath := RunsPath(path)
	err = atomicfile.Out(runsPath, stdout, func(w io.Writer) error {
		cols := runsTable(rs)
		cw := safetext.NewCSV(w)
		rec := make([]string, len(cols))
		for i, c := range cols {
			rec[i] = c.name
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
		for r := range rs {
			for i, c := range cols {
				rec[i] = cell(c.vals[r])
			}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	})
	return runsPath, err
}

// cell is a runs table value as CSV text.
func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return export.FormatFloat(x)
	case bool:
		return strconv.FormatBool(x)
	}
	panic("table: a runs table value of an unknown type") // runsTable makes only these
}

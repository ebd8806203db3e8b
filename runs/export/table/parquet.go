package table

import (
	"fmt"
	"io"
	"reflect"

	"github.com/parquet-go/parquet-go"

	"selmix/internal/atomicfile"
	"selmix/runs/export"
)

// longRow is a row of the long table in Parquet.
type longRow struct {
	Run    string `parquet:"run,dict"`
	Step   int64  `parquet:"step"`
	Split  string `parquet:"split,dict"`
	Metric string `parquet:"metric,dict"`
	Class  *int32 `parquet:"class,optional"` // null for a metric that is not per class
	// ClassName is the run's name of the class; null where it is not per
	// class or the run names none.
	ClassName *string `parquet:"class_name,optional,dict"`
	Value     float64 `parquet:"value"`
}

// batch is how many rows go to the Parquet writer at a time.
const batch = 4096

// WriteParquet writes the long table of rs to path and the runs table to
// RunsPath(path) as Parquet files (Snappy-compressed), each atomically,
// and returns the runs table's path ("" for a path that is not a file, as
// WriteCSV). class is null for a metric that is
// not per class; a runs table column is null where a run has no value.
func WriteParquet(path string, stdout io.Writer, rs []export.Recorded) (string, error) {
	beside := atomicfile.OutIsFile(path)
	err := atomicfile.Out(path, stdout, func(w io.Writer) error {
		pw := parquet.NewGenericWriter[longRow](w, parquet.Compression(&parquet.Snappy))
		buf := make([]longRow, 0, batch)
		flush := func() error {
			_, err := pw.Write(buf)
			buf = buf[:0]
			return err
		}
		for _, r := range rs {
			names := export.Classes(r.Hist)
			for p := range export.Points(r.Hist) {
				row := longRow{Run: r.Meta.ID, Step: int64(p.Step), Split: p.Split, Metric: p.Metric, Value: p.Value}
				if p.Class >= 0 {
					c := int32(p.Class)
					row.Class = &c
					if p.Class < len(names) {
						row.ClassName = &names[p.Class]
					}
				}
				if buf = append(buf, row); len(buf) == batch {
					if err := flush(); err != nil {
						return err
					}
				}
			}
		}
		if err := flush(); err != nil {
			return err
		}
		return pw.Close()
	})
	if err != nil || !beside {
		return "", err
	}
	runsPath := RunsPath(path)
	return runsPath, atomicfile.Out(runsPath, stdout, func(w io.Writer) error { return writeRunsParquet(w, rs) })
}

// writeRunsParquet writes the runs table. Its columns are known only at
// run time, so each row is a struct built with reflect whose fields, in
// column order, are pointers (nil: null) tagged with the column names.
func writeRunsParquet(w io.Writer, rs []export.Recorded) error {
	cols := runsTable(rs)
	fields := make([]reflect.StructField, len(cols))
	for i, c := range cols {
		var t reflect.Type
		switch c.kind {
		case kString:
			t = reflect.TypeFor[*string]()
		case kInt:
			t = reflect.TypeFor[*int64]()
		case kFloat:
			t = reflect.TypeFor[*float64]()
		case kBool:
			t = reflect.TypeFor[*bool]()
		}
		fields[i] = reflect.StructField{Name: fmt.Sprintf("C%d", i), Type: t, Tag: reflect.StructTag(fmt.Sprintf(`parquet:%q`, c.name+",optional"))}
	}
	rowType := reflect.StructOf(fields)
	pw := parquet.NewWriter(w, parquet.SchemaOf(reflect.New(rowType).Interface()), parquet.Compression(&parquet.Snappy))
	for r := range rs {
		row := reflect.New(rowType)
		for i, c := range cols {
			if v := c.vals[r]; v != nil {
				p := reflect.New(fields[i].Type.Elem())
				p.Elem().Set(reflect.ValueOf(v))
				row.Elem().Field(i).Set(p)
			}
		}
		if err := pw.Write(row.Interface()); err != nil {
			return err
		}
	}
	return pw.Close()
}

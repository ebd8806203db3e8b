// Package table writes recorded runs as two tables for notebooks, in CSV
// or Parquet: a long table of every number of every run (run, step,
// split, metric, class, class_name, value; runs/export's vocabulary) and a runs table
// (one row per run: its metadata, tags and every config key), the second
// beside the first with ".runs" before the extension (RunsPath;
// docs/run-format.md, "Tables").
package table

import (
	"fmt"
	"path/filepath"
	"strings"

	"selmix/runs"
	"selmix/runs/export"
)

// RunsPath is where the runs table goes beside the long table at path:
// "runs.csv" → "runs.runs.csv", "out.parquet" → "out.runs.parquet", "t"
// → "t.runs".
func RunsPath(path string) string {
	base := filepath.Base(path)
	ext := filepath.Ext(base)
	if ext == base {
		ext = "" // a dot file such as ".csv" has no extension
	}
	return strings.TrimSuffix(path, ext) + ".runs" + ext
}

// LongColumns are the columns of the long table.
var LongColumns = []string{"run", "step", "split", "metric", "class", "class_name", "value"}

// runColumn is a fixed column of the runs table.
type runColumn struct {
	name string
	kind kind
	get  func(r *export.Recorded) (any, bool) // the value, and whether there is one
}

// kind is a column's type.
type kind int

const (
	kString kind = iota
	kInt
	kFloat
	kBool
)

var runColumns = []runColumn{
	{"run", kString, func(r *export.Recorded) (any, bool) { return r.Meta.ID, true }},
	{"name", kString, func(r *export.Recorded) (any, bool) { return r.Meta.Name, true }},
	{"status", kString, func(r *export.Recorded) (any, bool) { return r.Status, true }},
	{"created", kString, func(r *export.Recorded) (any, bool) { return r.Meta.Created, true }},
	{"tags", kString, func(r *export.Recorded) (any, bool) { return strings.Join(r.Meta.Tags, " "), true }},
	{"note", kString, func(r *export.Recorded) (any, bool) { return r.Meta.Note, true }},
	{"objective", kString, func(r *export.Recorded) (any, bool) { return r.Meta.Objective, true }},
	{"policy", kString, func(r *export.Recorded) (any, bool) { return r.Meta.Policy, true }},
	{"steps", kInt, func(r *export.Recorded) (any, bool) { return int64(r.Meta.Steps), true }},
	{"best", kFloat, func(r *export.Recorded) (any, bool) { return r.Meta.Best, r.Meta.BestStep >= 0 }},
	{"best_step", kInt, func(r *export.Recorded) (any, bool) { return int64(r.Meta.BestStep), r.Meta.BestStep >= 0 }},
	{"parent", kString, func(r *export.Recorded) (any, bool) { return r.Meta.Parent, r.Meta.Parent != "" }},
	{"parent_step", kInt, func(r *export.Recorded) (any, bool) { return int64(r.Meta.ParentStep), r.Meta.Parent != "" }},
	{"format", kInt, func(r *export.Recorded) (any, bool) { return int64(r.Meta.Format), true }},
}

// ConfigPrefix starts the runs table's column of each config key.
const ConfigPrefix = "config."

// column is one column of the runs table and its values, one per run
// (nil: none).
type column struct {
	name string
	kind kind
	vals []any
}

// runsTable lays out the runs table: the fixed columns, then a column
// "config.<key>" for every config key any run has, sorted, typed by the
// values the runs have: integer, number (integers and floats mixed),
// bool, or text (anything else, or kinds mixed).
func runsTable(rs []export.Recorded) []column {
	var cols []column
	for _, c := range runColumns {
		col := column{name: c.name, kind: c.kind}
		for i := range rs {
			v, ok := c.get(&rs[i])
			if !ok {
				v = nil
			}
			col.vals = append(col.vals, v)
		}
		cols = append(cols, col)
	}
	cfgs := make([]runs.Config, len(rs))
	for i, r := range rs {
		cfgs[i] = r.Config
	}
	keys := runs.Keys(cfgs...)
	for _, k := range keys {
		col := column{name: ConfigPrefix + k}
		kinds := map[kind]bool{}
		for _, r := range rs {
			v, ok := r.Config[k]
			if !ok {
				col.vals = append(col.vals, nil)
				continue
			}
			switch v.(type) {
			case int64:
				kinds[kInt] = true
			case float64:
				kinds[kFloat] = true
			case bool:
				kinds[kBool] = true
			default:
				kinds[kString] = true
			}
			col.vals = append(col.vals, v)
		}
		switch {
		case len(kinds) == 1 && kinds[kInt]:
			col.kind = kInt
		case len(kinds) == 1 && kinds[kBool]:
			col.kind = kBool
		case (len(kinds) == 1 || len(kinds) == 2 && kinds[kInt]) && kinds[kFloat]:
			col.kind = kFloat
			for i, v := range col.vals {
				if n, ok := v.(int64); ok {
					col.vals[i] = float64(n)
				}
			}
		default:
			col.kind = kString
			for i, v := range col.vals {
				if v != nil {
					col.vals[i] = fmt.Sprint(v)
				}
			}
		}
		cols = append(cols, col)
	}
	return cols
}

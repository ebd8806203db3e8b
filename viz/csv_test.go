package viz

import (
	"math"
	"slices"
	"strconv"
	"testing"
)

// column is the cells of column name of t, row by row.
func column(t *testing.T, tb *table, name string) []string {
	t.Helper()
	c := slices.Index(tb.header, name)
	if c < 0 {
		t.Fatalf("no column %q in %q", name, tb.header)
	}
	out := make([]string, len(tb.rows))
	for i, row := range tb.rows {
		out[i] = row[c]
	}
	return out
}

// The G, P and λ CSVs name each class by its integer id and, where the
// run names its classes, by its name; each value is the run's at that
// class (pair) and step. Rows about no one class (a control, the head
// and tail multipliers) leave both empty.
func TestCSVClassIDs(t *testing.T) {
	const K, n = 6, 3
	f := newFigure(goldenOpts, colWidth, 2*72)
	for _, named := range []bool{true, false} {
		r := synthRun(t, K, n, named)
		name := func(c int) string {
			if named {
				return "name-" + strconv.Itoa(c)
			}
			return ""
		}
		// step → refresh
		at := map[string]int{}
		for i, rf := range r.Hist.Refreshes {
			at[strconv.Itoa(rf.Step)] = i
		}
		for _, which := range []string{"G", "P"} {
			tb, _, _, _, err := heatMatrices(r, which, []int{0, 1, 2})
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"matrix", "step", "row_class", "row_class_name", "col_class", "col_class_name", "value", "note"}
			if !slices.Equal(tb.header, want) {
				t.Fatalf("%s header %q, want %q", which, tb.header, want)
			}
			steps, vals := column(t, tb, "step"), column(t, tb, "value")
			rows, rowNames := column(t, tb, "row_class"), column(t, tb, "row_class_name")
			cols, colNames := column(t, tb, "col_class"), column(t, tb, "col_class_name")
			if len(vals) != n*K*K {
				t.Errorf("%s: %d rows, want %d", which, len(vals), n*K*K)
			}
			for k := range vals {
				i, err1 := strconv.Atoi(rows[k])
				j, err2 := strconv.Atoi(cols[k])
				if err1 != nil || err2 != nil || i < 0 || i >= K || j < 0 || j >= K {
					t.Fatalf("named %v %s row %d: classes %q, %q are not ids", named, which, k, rows[k], cols[k])
				}
				if rowNames[k] != name(i) || colNames[k] != name(j) {
					t.Errorf("named %v %s row %d: names %q, %q for classes %d, %d", named, which, k, rowNames[k], colNames[k], i, j)
				}
				st := r.Hist.Refreshes[at[steps[k]]].Stats
				m := st.G
				if which == "P" {
					m = st.P
				}
				if got, want := vals[k], formatValue(m[i*K+j]); got != want {
					t.Errorf("named %v %s(%d, %d) at step %s = %s, want %s", named, which, i, j, steps[k], got, want)
				}
			}
		}

		d, err := lambdaFigure(f, r)
		if err != nil {
			t.Fatal(err)
		}
		tb := d.table
		if want := []string{"multiplier", "step", "class", "class_name", "value", "note"}; !slices.Equal(tb.header, want) {
			t.Fatalf("λ header %q, want %q", tb.header, want)
		}
		mult, steps, classes, names, vals := column(t, tb, "multiplier"), column(t, tb, "step"), column(t, tb, "class"), column(t, tb, "class_name"), column(t, tb, "value")
		seen := 0
		for k := range vals {
			if mult[k] != "lambda" {
				t.Errorf("named %v: λ row %d is %q", named, k, tb.rows[k])
				continue
			}
			c, err := strconv.Atoi(classes[k])
			if err != nil || c < 0 || c >= K || names[k] != name(c) {
				t.Fatalf("named %v: λ row %d: class %q name %q", named, k, classes[k], names[k])
			}
			if got, want := vals[k], formatValue(r.Hist.Refreshes[at[steps[k]]].Stats.Lambda[c]); got != want {
				t.Errorf("named %v: λ_%d at step %s = %s, want %s", named, c, steps[k], got, want)
			}
			seen++
		}
		if seen != n*K {
			t.Errorf("named %v: %d λ rows, want %d", named, seen, n*K)
		}
	}

	// Head and tail multipliers belong to no one class.
	r := synthRun(t, K, n, true)
	for i := range r.Hist.Refreshes {
		r.Hist.Refreshes[i].Stats.Lambda = []float64{0.25, 0.75}
	}
	d, err := lambdaFigure(f, r)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, row := range d.table.rows {
		got = append(got, row[0]+","+row[2]+","+row[3]+","+row[4])
	}
	want := []string{"lambda/head,,,0.25", "lambda/head,,,0.25", "lambda/head,,,0.25", "lambda/tail,,,0.75", "lambda/tail,,,0.75", "lambda/tail,,,0.75"}
	if !slices.Equal(got, want) {
		t.Errorf("head/tail rows %q, want %q", got, want)
	}
}

// A figure's CSV quotes a name a spreadsheet would run as a formula (a
// class or run name from outside) and keeps numbers, negative ones and
// -Inf included, as numbers.
func TestCSVFormulaCells(t *testing.T) {
	tb := newTable("run", "class_name", "value")
	tb.add(-0.5, "=HYPERLINK(\"http://x\")", "@cmd")
	tb.add(math.Inf(-1), "-fork", "+1")
	want := "run,class_name,value,note\n" +
		"\"'=HYPERLINK(\"\"http://x\"\")\",'@cmd,-0.5,\n" +
		"'-fork,+1,-Inf,not plotted: -Inf\n"
	if got := string(tb.bytes()); got != want {
		t.Errorf("CSV\n%s\nwant\n%s", got, want)
	}
}

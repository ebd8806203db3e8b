package sweep

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"selmix/internal/safetext"
	"selmix/runs/sweep"
	"selmix/tui/style"
)

// column is one column of the table: its heading, a member's cell, and
// the value members and groups sort by.
type column struct {
	name   string
	right  bool // right-aligned (numbers)
	config bool // a sweep column but seed: the same across a group
	cell   func(sweep.MemberStatus) string
	key    func(sweep.MemberStatus) float64  // NaN: sort by cell text
	agg    func([]sweep.MemberStatus) string // a group's cell; nil: blank
	mean   bool                              // a group sorts by its members' mean
}

// minSpark is the narrowest sparkline drawn (at 80 columns one of 2
// characters was).
const minSpark = 8

// columns are "#", the sweep's columns, state, (rung or gen in a search,)
// (slurm,) (gpus, where a member has some,) step, ψ now and best ψ.
func (m *Model) columns() []column {
	nan := func(sweep.MemberStatus) float64 { return math.NaN() }
	cols := []column{{name: "#", right: true, cell: func(ms sweep.MemberStatus) string { return fmt.Sprint(ms.Index) },
		key: func(ms sweep.MemberStatus) float64 { return float64(ms.Index) }}}
	if m.st == nil {
		return cols
	}
	for c, name := range sweep.ShortNames(m.st.Columns) {
		cell := func(ms sweep.MemberStatus) string {
			if c < len(ms.Values) {
				return ms.ValueTexts()[c]
			}
			return "-"
		}
		key := func(ms sweep.MemberStatus) float64 {
			if x, err := strconv.ParseFloat(cell(ms), 64); err == nil {
				return x
			}
			return math.NaN()
		}
		col := column{name: name, cell: cell, key: key, config: m.st.Columns[c] != sweep.SeedKey}
		if col.config {
			col.agg = func(ms []sweep.MemberStatus) string { return cell(ms[0]) }
		} else {
			col.agg = func(ms []sweep.MemberStatus) string { return fmt.Sprintf("n=%d", len(ms)) }
		}
		cols = append(cols, col)
	}
	cols = append(cols, column{name: "state", cell: sweep.MemberStatus.StateText, key: nan, agg: states})
	// Where a member stands in the search: successive halving's rung, a
	// population's generation (and whom a copy continues).
	if m.st.ASHA != nil {
		cols = append(cols, column{name: "rung", cell: func(ms sweep.MemberStatus) string { return dash(ms.Rung) }, key: nan})
	}
	if m.st.PBT != nil {
		cols = append(cols, column{name: "gen", cell: func(ms sweep.MemberStatus) string { return dash(ms.Gen) }, key: nan})
		cols = append(cols, column{name: "now", cell: func(ms sweep.MemberStatus) string { return dash(ms.Now) }, key: nan})
	}
	if m.st.Slurm {
		cols = append(cols, column{name: "slurm", cell: sweep.MemberStatus.SlurmText, key: nan})
	}
	if m.st.HasGPUs() {
		cols = append(cols, column{name: "gpus", cell: sweep.MemberStatus.GPUsText, key: nan})
	}
	psi := func(ms sweep.MemberStatus) float64 { return ms.Psi }
	best := func(ms sweep.MemberStatus) float64 { return ms.Best }
	testEnd := func(ms sweep.MemberStatus) float64 { return ms.TestEnd }
	testBest := func(ms sweep.MemberStatus) float64 { return ms.TestBest }
	return append(cols,
		column{name: "step", right: true, cell: sweep.MemberStatus.StepText, key: func(ms sweep.MemberStatus) float64 { return float64(ms.Step) }},
		column{name: "ψ now", right: true, mean: true, cell: sweep.MemberStatus.PsiText, key: psi, agg: meanStd(psi)},
		column{name: "best ψ", right: true, mean: true, cell: sweep.MemberStatus.BestText, key: best, agg: meanStd(best)},
		// The optimized ψ on test at the last step and at the best step
		// (the model each run keeps); a group shows the mean, to leave the
		// sparkline its room.
		column{name: "test end", right: true, mean: true, cell: sweep.MemberStatus.TestEndText, key: testEnd, agg: mean(testEnd)},
		column{name: "test best", right: true, mean: true, cell: sweep.MemberStatus.TestBestText, key: testBest, agg: mean(testBest)})
}

// dash is s, or "–" when empty.
func dash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// meanStd is a group's "mean ± sample std" of get over the members that
// have a value.
func meanStd(get func(sweep.MemberStatus) float64) func([]sweep.MemberStatus) string {
	return func(ms []sweep.MemberStatus) string {
		var xs []float64
		for _, x := range ms {
			if v := get(x); !math.IsNaN(v) {
				xs = append(xs, v)
			}
		}
		return sweep.MeanStd(xs)
	}
}

// mean is a group's mean of get over the members that have a value, "–"
// if none has.
func mean(get func(sweep.MemberStatus) float64) func([]sweep.MemberStatus) string {
	return func(ms []sweep.MemberStatus) string {
		var sum float64
		n := 0
		for _, x := range ms {
			if v := get(x); !math.IsNaN(v) {
				sum += v
				n++
			}
		}
		if n == 0 {
			return "–"
		}
		return fmt.Sprintf("%.4f", sum/float64(n))
	}
}

// states counts a group's members by state: "2 finished, 1 running".
func states(ms []sweep.MemberStatus) string {
	var names []string
	n := map[string]int{}
	for _, x := range ms {
		s := x.StateText()
		if n[s] == 0 {
			names = append(names, s)
		}
		n[s]++
	}
	parts := make([]string, len(names))
	for i, s := range names {
		parts[i] = fmt.Sprintf("%d %s", n[s], s)
	}
	return strings.Join(parts, ", ")
}

// groups are the members that differ only by seed, in first-seen order,
// each a list of member indices.
func (m *Model) groups() [][]int {
	var out [][]int
	keyOf := func(ms sweep.MemberStatus) string {
		var parts []string
		for c, v := range ms.Values {
			if c < len(m.st.Columns) && m.st.Columns[c] != sweep.SeedKey {
				parts = append(parts, v)
			}
		}
		return strings.Join(parts, "\x00")
	}
	at := map[string]int{}
	for i, ms := range m.st.Members {
		k := keyOf(ms)
		g, ok := at[k]
		if !ok {
			g = len(out)
			at[k] = g
			out = append(out, nil)
		}
		out[g] = append(out[g], i)
	}
	return out
}

// sorted orders the groups, and the members inside each, by the sort
// column: numbers as numbers (unknown last), else text; a group sorts by
// its first member in that order (for ψ and test ψ: by its mean).
func (m *Model) sorted() [][]int {
	if m.st == nil {
		return nil
	}
	col := m.columns()[m.sortCol]
	mem := m.st.Members
	less := func(a, b sweep.MemberStatus) int {
		x, y := col.key(a), col.key(b)
		var c int
		switch {
		case math.IsNaN(x) && math.IsNaN(y):
			c = strings.Compare(col.cell(a), col.cell(b))
		case math.IsNaN(x):
			return 1 // unknown last, either way
		case math.IsNaN(y):
			return -1
		default:
			c = cmp.Compare(x, y)
		}
		if m.desc {
			c = -c
		}
		return cmp.Or(c, cmp.Compare(a.Index, b.Index))
	}
	gs := m.groups()
	mean := func(g []int) sweep.MemberStatus {
		rep := mem[g[0]]
		if col.mean {
			var sum float64
			n := 0
			for _, i := range g {
				if v := col.key(mem[i]); !math.IsNaN(v) {
					sum += v
					n++
				}
			}
			v := math.NaN()
			if n > 0 {
				v = sum / float64(n)
			}
			rep.Psi, rep.Best, rep.TestEnd, rep.TestBest = v, v, v, v
		}
		return rep
	}
	for _, g := range gs {
		slices.SortStableFunc(g, func(a, b int) int { return less(mem[a], mem[b]) })
	}
	slices.SortStableFunc(gs, func(a, b []int) int { return less(mean(a), mean(b)) })
	return gs
}

// memberOrder is the members in the order the table lists them.
func (m *Model) memberOrder() []int {
	var out []int
	for _, g := range m.sorted() {
		out = append(out, g...)
	}
	return out
}

// table is the groups and members in w columns and h lines (a header
// line, then as many rows as fit, scrolled to keep the selection in
// view). A group of one member is one row; a larger group is a row of
// its mean ± std over seeds with its members beneath.
func (m *Model) table(w, h int) string {
	th := m.ctx.Theme
	st := m.st
	cols := m.columns()
	rows := m.tableRows(cols)
	names := make([]string, len(cols))
	for c, col := range cols {
		names[c] = safetext.Line(col.name)
		if c == m.sortCol {
			names[c] += map[bool]string{false: "↑", true: "↓"}[m.desc]
		}
	}
	widths := make([]int, len(cols))
	for c := range cols {
		widths[c] = style.Width(names[c])
		for _, r := range rows {
			widths[c] = max(widths[c], style.Width(r.cells[c]))
		}
	}
	line := func(cells []string) string {
		var b strings.Builder
		for c, cell := range cells {
			if c > 0 {
				b.WriteString("  ")
			}
			if cols[c].right {
				b.WriteString(style.PadLeft(cell, widths[c]))
			} else {
				b.WriteString(style.PadRight(cell, widths[c]))
			}
		}
		return b.String()
	}
	fixed := 2 + style.Width(line(names)) + 2
	spark := max(0, w-fixed)
	if spark < minSpark {
		spark = 0 // a sparkline of a few characters says nothing: none
	}
	out := []string{"  " + th.Render(th.Bold, line(names)) + "  " + th.Render(th.Bold, style.PadRight("ψ over refreshes", spark))}
	n := max(1, h-1)
	m.scrollTo(rows, n)
	for i := m.top; i < len(rows) && i < m.top+n; i++ {
		r := rows[i]
		if r.member < 0 {
			out = append(out, "  "+th.Render(th.Bold, line(r.cells)))
			continue
		}
		mem := st.Members[r.member]
		mark := "  "
		if r.member == m.sel {
			mark = "▶ "
		}
		text := line(r.cells) + "  " + style.PadRight(style.Sparkline(r.hist, spark), spark)
		switch {
		case r.member == m.sel && !th.Plain:
			text = th.Selected.Render(text)
		case mem.Category == sweep.Failed:
			text = th.Render(th.Bad, text)
		case mem.Category == sweep.Finished:
			text = th.Render(th.Good, text)
		case mem.Category == sweep.Pending:
			text = th.Render(th.Dim, text)
		}
		out = append(out, mark+text)
	}
	return style.Fit(strings.Join(out, "\n"), w, h)
}

// tableRow is one line of the table: a member's cells and ψ history, or
// a group's row (member -1) with what its members share and aggregates.
type tableRow struct {
	cells  []string
	member int
	hist   []float64
}

// tableRows are the table's lines in order: per group of members that
// differ only by seed, the group's row (if more than one) then each
// member's, whose configuration cells the group's row already says.
func (m *Model) tableRows(cols []column) []tableRow {
	st := m.st
	var rows []tableRow
	for _, g := range m.sorted() {
		if len(g) > 1 {
			ms := make([]sweep.MemberStatus, len(g))
			for i, x := range g {
				ms[i] = st.Members[x]
			}
			cells := make([]string, len(cols))
			for c, col := range cols {
				if col.agg != nil {
					cells[c] = col.agg(ms)
				}
			}
			rows = append(rows, tableRow{cells: cells, member: -1})
		}
		for _, i := range g {
			cells := make([]string, len(cols))
			for c, col := range cols {
				cells[c] = safetext.Line(col.cell(st.Members[i])) // values of the spec, states read from runs
				if len(g) > 1 && col.config {
					cells[c] = "" // said on the group's row
				}
			}
			rows = append(rows, tableRow{cells: cells, member: i, hist: st.Members[i].History})
		}
	}
	return rows
}

// scrollTo moves the table's first shown row so the selected member's
// row is among the n shown.
func (m *Model) scrollTo(rows []tableRow, n int) {
	selRow := 0
	for i, r := range rows {
		if r.member == m.sel {
			selRow = i
		}
	}
	if selRow < m.top {
		m.top = selRow
	}
	if selRow >= m.top+n {
		m.top = selRow - n + 1
	}
	m.top = max(0, min(m.top, len(rows)-n))
}

package sweep

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// AllMembers are the indices of every member of s, in order.
func (s *Sweep) AllMembers() []int {
	out := make([]int, len(s.Members))
	for i := range out {
		out[i] = i
	}
	return out
}

// WriteList writes the sweeps of the runs root root as a table, one line
// each with its members' states, after a warning line per unreadable
// sweep folder; cl is the Slurm a sweep run there is asked about (nil:
// none).
func WriteList(ctx context.Context, w io.Writer, root string, cl Cluster) error {
	all, bad, err := List(root)
	if err != nil {
		return err
	}
	for _, e := range bad {
		fmt.Fprintf(w, "warning: %v\n", e)
	}
	if len(all) == 0 {
		fmt.Fprintf(w, "no sweeps in %s\n", Root(root))
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SWEEP\tEXECUTOR\tMEMBERS\tFINISHED\tRUNNING\tPENDING\tFAILED\tCREATED")
	for _, s := range all {
		st, err := NewReader(s, cl).Status(ctx)
		if err != nil {
			fmt.Fprintf(tw, "%s\t%s\t%d\t(%v)\n", s.ID, s.Executor, len(s.Members), err)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", s.ID, s.Executor, len(s.Members), st.Count(Finished),
			st.Count(Running), st.Count(Pending), st.Count(Failed), strings.Replace(s.Created, "T", " ", 1))
	}
	return tw.Flush()
}

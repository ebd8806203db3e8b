package sweep

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// ToResume reads the members' states (Status, asking Slurm, cl, when the
// sweep ran there) and returns the members to run again
// (Status.Resumable) and the status. When the sweep ran on Slurm and
// Slurm cannot be asked, it is an error: a queued task would run twice.
func (s *Sweep) ToResume(ctx context.Context, cl Cluster) ([]int, *Status, error) {
	st, err := NewReader(s, cl).Status(ctx)
	if err != nil {
		return nil, nil, err
	}
	if len(st.Notes) > 0 && len(s.Jobs) > 0 {
		return nil, nil, fmt.Errorf("cannot tell which members Slurm still holds (%s); run this where squeue works", strings.Join(st.Notes, "; "))
	}
	return st.Resumable(), st, nil
}

// Describe names members with their states: "2 (failed), 5 (cancelled)".
func (st *Status) Describe(members []int) string {
	var desc []string
	for _, i := range members {
		desc = append(desc, fmt.Sprintf("%d (%s)", i, st.Members[i].StateText()))
	}
	return strings.Join(desc, ", ")
}

// Watch writes the status table of the sweep (Status.WriteTable). With
// every > 0 it writes it again every that long, each under a line naming
// the sweep and the time, until every member has ended or ctx is done;
// clear redraws it in place (a terminal), else a blank line parts them.
func (r *Reader) Watch(ctx context.Context, w io.Writer, every time.Duration, clear bool) error {
	for {
		st, err := r.Status(ctx)
		if err != nil {
			return err
		}
		if every > 0 && clear {
			fmt.Fprint(w, "\x1b[H\x1b[2J") // redraw in place
		}
		if every > 0 {
			fmt.Fprintf(w, "sweep %s (%s) at %s\n", r.s.ID, r.s.Executor, time.Now().Format("15:04:05"))
		}
		if err := st.WriteTable(w); err != nil {
			return err
		}
		if every <= 0 || st.Done() {
			return nil
		}
		if !clear {
			fmt.Fprintln(w)
		}
		select {
		case <-time.After(every):
		case <-ctx.Done():
			return nil
		}
	}
}

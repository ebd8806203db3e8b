package search

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// FuzzParse: no spec text panics the parser or the member expansion; what
// parses expands to Count members, each naming a value for every column
// and its run last; what fails says so naming the file.
func FuzzParse(f *testing.F) {
	f.Add([]byte(gridSpec))
	f.Add([]byte("[[rows]]\nfinetune.objective = \"hmean\"\n[[rows]]\n\"finetune.policy\" = \"greedy\"\n[axes]\nseed = [1, 2]\n"))
	f.Add([]byte("[axes]\nseed=[1]\n[slurm]\npartition = \"gpu\"\nmax_parallel = 2\nsignal_seconds = 60\nrequeue = true\nextra = [\"--account=x\"]\n"))
	f.Add([]byte("[base]\n[base.finetune]\nsteps = 5\n[axes.model]\nhidden = [[64], [32, 16]]\n"))
	f.Add([]byte(drawnSpec))
	f.Add([]byte("[axes]\n\"finetune.refresh\" = { uniform = [10, 20] }\n[axes.finetune]\nlr = { choice = [0.1, 0.2] }\n[random]\nsteps = 9000\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		s, err := Parse(text, "fuzz.toml")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.toml: ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		n := s.Count()
		if n < 1 || n > MaxMembers {
			t.Fatalf("parsed with %d members", n)
		}
		cols := s.Columns()
		if len(slices.Compact(slices.Sorted(slices.Values(cols)))) != len(cols) {
			t.Fatalf("columns repeat: %v", cols)
		}
		if n > 64 || s.Random != nil && s.Random.Members != nil && *s.Random.Members > 64 || s.Random != nil && s.Random.Steps != nil && *s.Random.Steps > 1e6 {
			return // expanding is correct at any size; keep the fuzzer fast
		}
		how := Grid
		if s.HasDists() || s.Random != nil {
			how = Random
		}
		ms, dr, err := s.Expand("fz-0000", how)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.toml: ") {
				t.Fatalf("expansion error does not name the file: %v", err)
			}
			if how == Grid && !strings.HasPrefix(err.Error(), "fuzz.toml: member ") && !strings.HasPrefix(err.Error(), "fuzz.toml: base_config") {
				t.Fatalf("member error does not name the member: %v", err)
			}
			return
		}
		want := n
		if dr != nil {
			want = dr.Points * max(1, len(s.Rows))
			if i := slices.IndexFunc(s.Axes, func(a Axis) bool { return a.Key == PairedKey && a.Dist == nil }); i >= 0 {
				want *= len(s.Axes[i].Values)
			}
		}
		if len(ms) != want {
			t.Fatalf("%d members, want %d (Count %d, the draw %+v)", len(ms), want, n, dr)
		}
		for i, m := range ms {
			if m.Index != i || len(m.Vary) != len(cols) || m.Run != fmt.Sprintf("fz-0000-%d", i) {
				t.Fatalf("member %d malformed: %+v", i, m)
			}
			if last := m.Sets[len(m.Sets)-1]; last != `name="`+m.Run+`"` {
				t.Fatalf("member %d: last set %q", i, last)
			}
		}
	})
}

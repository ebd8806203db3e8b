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
		if n > 64 {
			return // expanding is correct at any size; keep the fuzzer fast
		}
		ms, err := s.Members("fz-0000")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.toml: member ") && !strings.HasPrefix(err.Error(), "fuzz.toml: base_config") {
				t.Fatalf("member error does not name the member: %v", err)
			}
			return
		}
		if len(ms) != n {
			t.Fatalf("%d members, Count says %d", len(ms), n)
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

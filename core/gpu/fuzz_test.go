package gpu

import (
	"strings"
	"testing"
)

// The readers of what comes from outside (the environment, nvidia-smi,
// the command line) never panic, and what they accept is well formed.
func FuzzParse(f *testing.F) {
	f.Add("0,1")
	f.Add("GPU-8f2c, MIG-GPU-8f2c/1/0")
	f.Add("1,,2")
	f.Add(fourGPUs)
	f.Add("0, GPU-a0, 5, 1024, 81920\n1, GPU-a1, [N/A], 2048, 81920\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, id := range ParseVisible(s) {
			if !ValidID(id) {
				t.Fatalf("ParseVisible(%q) gave %q", s, id)
			}
		}
		if l, err := ParseList("--gpus", s); err == nil {
			for _, id := range l {
				if !ValidID(id) {
					t.Fatalf("ParseList(%q) gave %q", s, id)
				}
			}
		} else if strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "--gpus ") {
			t.Fatalf("ParseList(%q): %q is not one line naming --gpus", s, err)
		}
		if ids, uuids, err := ParseSMI(s); err == nil && len(ids) != len(uuids) {
			t.Fatalf("ParseSMI(%q): %d ids, %d uuids", s, len(ids), len(uuids))
		}
		for _, st := range ParseStats(s) {
			if st.Util < 0 || st.Util > 1 || st.MemUsed < 0 || st.MemTotal < 0 {
				t.Fatalf("ParseStats(%q) gave %+v", s, st)
			}
		}
	})
}

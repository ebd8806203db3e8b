package blas

import (
	"runtime"
	"strings"
	"testing"
)

func TestCPUModel(t *testing.T) {
	in := "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\x1b[31m 9654\nflags\t: fpu\n\nprocessor\t: 1\nmodel name\t: other\n"
	if got := cpuModel(strings.NewReader(in)); got != "AMD EPYC[31m 9654" {
		t.Errorf("cpuModel = %q, want the first model name without its escape", got)
	}
	if got := cpuModel(strings.NewReader("processor : 0\n")); got != "" {
		t.Errorf("no model name: %q", got)
	}
	if got := cpuModel(strings.NewReader("model name : " + strings.Repeat("x", 500) + "\n")); len(got) != 120 {
		t.Errorf("long model name: %d bytes, want 120", len(got))
	}
}

// Kernels are known by name in any case; a kernel of another architecture
// is unknown, and none of the AVX-512 kernels runs where AVX2 does not.
func TestCanRun(t *testing.T) {
	if _, known := CanRun("ARMV8"); known {
		t.Error("ARMV8 read as an x86 kernel")
	}
	hs, known := CanRun("HASWELL")
	if !known {
		t.Fatal("Haswell unknown")
	}
	if sx, _ := CanRun("SkylakeX"); sx && !hs {
		t.Error("SkylakeX runs where Haswell does not")
	}
	if runtime.GOARCH == "amd64" {
		if ok, _ := CanRun("Prescott"); !ok {
			t.Error("an amd64 CPU cannot run Prescott (SSE3)")
		}
	}
	// The kernel OpenBLAS picked runs here, where selmix knows it.
	if c := Core(); c != "" {
		if ok, known := CanRun(c); known && !ok {
			t.Errorf("OpenBLAS runs %s here, which CanRun says this CPU cannot", c)
		}
	}
}

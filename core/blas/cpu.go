package blas

import (
	"bufio"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/cpu"
)

// CanRun reports whether this CPU can run OpenBLAS kernel name (as Core
// names it), and known is false where selmix cannot tell: a kernel of
// another architecture or one it has no table for. A kernel forced onto a
// CPU without its instructions dies of SIGILL, so only a known kernel is
// ever forced.
func CanRun(name string) (ok, known bool) {
	need, known := kernelNeeds[strings.ToLower(name)]
	if !known {
		return false, false
	}
	for _, f := range need {
		if !f() {
			return false, true
		}
	}
	return true, true
}

// kernelNeeds lists, for each x86-64 kernel of OpenBLAS's DYNAMIC_ARCH
// build, the instruction sets its code uses (OpenBLAS's driver/others/
// dynamic.c checks the same before choosing one).
var kernelNeeds = map[string][]func() bool{
	"prescott":       {sse3},
	"core2":          {ssse3},
	"penryn":         {sse41},
	"dunnington":     {sse41},
	"nehalem":        {sse42},
	"opteron":        {sse2},
	"barcelona":      {sse3},
	"sandybridge":    {avx},
	"haswell":        {avx2, fma},
	"zen":            {avx2, fma},
	"skylakex":       {avx512},
	"cooperlake":     {avx512, bf16},
	"sapphirerapids": {avx512, bf16, func() bool { return cpu.X86.HasAMXBF16 }},
}

func sse2() bool  { return cpu.X86.HasSSE2 }
func sse3() bool  { return cpu.X86.HasSSE3 }
func ssse3() bool { return cpu.X86.HasSSSE3 }
func sse41() bool { return cpu.X86.HasSSE41 }
func sse42() bool { return cpu.X86.HasSSE42 }
func avx() bool   { return cpu.X86.HasAVX }
func avx2() bool  { return cpu.X86.HasAVX2 }
func fma() bool   { return cpu.X86.HasFMA }
func bf16() bool  { return cpu.X86.HasAVX512BF16 }
func avx512() bool {
	x := cpu.X86
	return x.HasAVX512F && x.HasAVX512CD && x.HasAVX512BW && x.HasAVX512DQ && x.HasAVX512VL
}

// CPU is this machine's processor as the kernel names it (/proc/cpuinfo's
// "model name"), "" where it does not say.
func CPU() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	return cpuModel(io.LimitReader(f, 1<<20))
}

// cpuModel reads the first "model name" of a cpuinfo listing.
func cpuModel(r io.Reader) string {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			v = strings.TrimSpace(v)
			if len(v) > 120 {
				v = v[:120]
			}
			return strings.Map(func(r rune) rune {
				if r < 0x20 || r == 0x7f || r == utf8.RuneError {
					return -1
				}
				return r
			}, v)
		}
	}
	return ""
}

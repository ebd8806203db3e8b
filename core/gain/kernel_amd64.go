//go:build amd64 && !purego

package gain

//go:noescape
func dot3x3AVX(a0, a1, a2, b0, b1, b2 *float64, n int, c *[9]float64)

func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)

func xgetbv() (eax, edx uint32)

// hasAVX2FMA reports whether the CPU and OS support the AVX2+FMA kernel.
func hasAVX2FMA() bool {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const fma, osxsave, avx = 1 << 12, 1 << 27, 1 << 28
	if ecx1&(fma|osxsave|avx) != fma|osxsave|avx {
		return false
	}
	if xcr0, _ := xgetbv(); xcr0&6 != 6 { // OS saves XMM and YMM state
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&(1<<5) != 0
}

// useAVX is switched off by tests to exercise the portable kernel.
var useAVX = hasAVX2FMA()

// dot3x3 returns the nine dot products a_r·b_s (r, s < 3) of equal-length
// slices.
func dot3x3(c *[9]float64, a0, a1, a2, b0, b1, b2 []float64) {
	n := len(a0)
	if !useAVX || n < 4 {
		dot3x3Go(c, a0, a1, a2, b0, b1, b2)
		return
	}
	_, _, _, _, _ = a1[n-1], a2[n-1], b0[n-1], b1[n-1], b2[n-1]
	n4 := n &^ 3
	dot3x3AVX(&a0[0], &a1[0], &a2[0], &b0[0], &b1[0], &b2[0], n4, c)
	if n4 < n {
		var t [9]float64
		dot3x3Go(&t, a0[n4:], a1[n4:n], a2[n4:n], b0[n4:n], b1[n4:n], b2[n4:n])
		for i, v := range t {
			c[i] += v
		}
	}
}

//go:build !amd64 || purego

package gain

var useAVX = false

func dot3x3(c *[9]float64, a0, a1, a2, b0, b1, b2 []float64) {
	dot3x3Go(c, a0, a1, a2, b0, b1, b2)
}

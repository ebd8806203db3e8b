package style

import "testing"

func TestBar(t *testing.T) {
	cases := []struct {
		frac float64
		w    int
		want string
	}{
		{0, 4, "····"}, {1, 4, "████"}, {0.5, 4, "██··"}, {0.5625, 4, "██▎·"}, {2, 3, "███"}, {-1, 3, "···"},
	}
	for _, c := range cases {
		if got := Bar(c.frac, c.w); got != c.want {
			t.Errorf("Bar(%g, %d) = %q, want %q", c.frac, c.w, got, c.want)
		}
	}
}

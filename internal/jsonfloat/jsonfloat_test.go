package jsonfloat

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want string
	}{
		{0.5, `0.5`}, {-3, `-3`}, {1e-300, `1e-300`}, {math.NaN(), `"NaN"`}, {math.Inf(1), `"+Inf"`}, {math.Inf(-1), `"-Inf"`},
	} {
		b, err := json.Marshal(Float(c.in))
		if err != nil || string(b) != c.want {
			t.Errorf("Marshal(%v) = %s, %v; want %s", c.in, b, err, c.want)
		}
		var back Float
		if err := json.Unmarshal(b, &back); err != nil || !(float64(back) == c.in || math.IsNaN(c.in) && math.IsNaN(float64(back))) {
			t.Errorf("Unmarshal(%s) = %v, %v; want %v", b, back, err, c.in)
		}
	}
	var x Float
	if err := json.Unmarshal([]byte(`"Inf"`), &x); err != nil || !math.IsInf(float64(x), 1) {
		t.Errorf(`"Inf" read as %v, %v`, x, err)
	}
	for _, bad := range []string{`"nan"`, `"1.5"`, `true`, `[1]`} {
		if err := json.Unmarshal([]byte(bad), &x); err == nil {
			t.Errorf("%s accepted as %v", bad, x)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error of more than one line: %v", bad, err)
		}
	}
}

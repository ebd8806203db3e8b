// Package jsonfloat is selmix's one JSON encoding of a float64: the event
// log, summary.json, run.json, the control socket and every --json output
// use it. NaN and ±Inf, which JSON numbers cannot express, are written as
// the strings "NaN", "+Inf" and "-Inf" (Python's float() reads all three).
package jsonfloat

import (
	"encoding/json"
	"fmt"
	"math"
)

// Float is a float64 JSON can always hold.
type Float float64

// MarshalJSON writes x as a JSON number, or "NaN", "+Inf" or "-Inf".
func (x Float) MarshalJSON() ([]byte, error) {
	v := float64(x)
	switch {
	case math.IsNaN(v):
		return []byte(`"NaN"`), nil
	case math.IsInf(v, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-Inf"`), nil
	}
	return json.Marshal(v)
}

// UnmarshalJSON reads a JSON number or one of the strings MarshalJSON
// writes ("Inf" too).
func (x *Float) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		switch s {
		case "NaN":
			*x = Float(math.NaN())
		case "+Inf", "Inf":
			*x = Float(math.Inf(1))
		case "-Inf":
			*x = Float(math.Inf(-1))
		default:
			return fmt.Errorf("%q is not a number, NaN, +Inf or -Inf", s)
		}
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*x = Float(v)
	return nil
}

package loop

import (
	"fmt"
)

// Adapt says whether and how the engine keeps its steps inside the region
// where its own first-order prediction holds (docs/method.md, "Keeping the
// step where the prediction holds").
type Adapt string

const (
	AdaptNone    Adapt = "none"    // the paper's method: fixed interval and step
	AdaptRefresh Adapt = "refresh" // shorten the refresh interval
	AdaptLR      Adapt = "lr"      // scale the learning rate
)

// ParseAdapt parses none, refresh or lr.
func ParseAdapt(s string) (Adapt, error) {
	switch a := Adapt(s); a {
	case AdaptNone, AdaptRefresh, AdaptLR:
		return a, nil
	}
	return "", fmt.Errorf("unknown adaptation %q (want none, refresh or lr)", s)
}

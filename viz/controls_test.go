package viz

import (
	"fmt"
	"strings"
	"testing"

	"selmix/core/loop"
)

// finetune.adapt's changes follow from the configuration: figures draw
// and key only the controls someone sent (with their source when it is
// not the researcher live), never adapt's.
func TestControlsShownLeaveAdaptOut(t *testing.T) {
	r := fixture(t, "viz-selmix")
	r.Hist.Controls = append(r.Hist.Controls,
		loop.Ack{Control: loop.Control{Op: loop.OpSet, Key: "lr", Value: "0.0007", Source: loop.SourceAdapt}, Step: 150},
		loop.Ack{Control: loop.Control{Op: loop.OpSet, Key: "s", Value: "12", Source: loop.SourceSchedule}, Step: 160},
	)
	var got []string
	for _, a := range controlsShown(r) {
		got = append(got, a.Control.Tagged())
	}
	if want := "set s=30|set lr=0.001|set s=12 (schedule)"; strings.Join(got, "|") != want {
		t.Errorf("controls shown %q, want %q", strings.Join(got, "|"), want)
	}
	var f figure
	key := f.controlKey(r, "")
	if len(key) != 1 || strings.Contains(key[0].label, "0.0007") || !strings.Contains(key[0].label, "set s=12 (schedule) at step 160") {
		t.Errorf("control key %+v", key)
	}
}

// Every policy has its own line pattern in the comparison figures, so
// selmix and greedy differ without colour (issue #37).
func TestPolicyStyles(t *testing.T) {
	seen := map[string]string{}
	for _, p := range []string{"selmix", "uniform", "greedy", "none", "csst", "mislas2", "resample"} {
		d := fmt.Sprint(policyStyle(p, grey, 1).Dashes)
		if q, ok := seen[d]; ok {
			t.Errorf("%s and %s share the line pattern %s", p, q, d)
		}
		seen[d] = p
	}
}

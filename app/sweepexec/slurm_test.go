package sweepexec

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseTasks(t *testing.T) {
	squeue := strings.Join([]string{
		"100|0|COMPLETED",
		"100|1|CANCELLED",
		"100|[4-5%2]|PENDING", // not split off: ignored
		"100|2|RUNNING",
		"107|1|PENDING", // the resubmission of member 1 wins
		"100|9|RUNNING", // not a member
		"garbage",
	}, "\n")
	ts := parseTasks(squeue, 6)
	got := map[int]string{}
	for i, t := range ts.latest {
		got[i] = t.state
	}
	want := map[int]string{0: "COMPLETED", 1: "PENDING", 2: "RUNNING"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tasks %v, want %v", got, want)
	}
	if !ts.jobs["100"] || !ts.jobs["107"] {
		t.Errorf("jobs seen: %v", ts.jobs)
	}
	sacct := "100_3|CANCELLED by 0\n100_[4-5]|PENDING\n100|COMPLETED\n"
	ts = parseTasks(sacctLines(sacct), 6)
	if len(ts.latest) != 1 || ts.latest[3].state != "CANCELLED" {
		t.Errorf("sacct tasks: %+v", ts.latest)
	}
}

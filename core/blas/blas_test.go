package blas

import "testing"

func TestSetThreads(t *testing.T) {
	before := Threads()
	defer SetThreads(before)
	SetThreads(1)
	if got := Threads(); got != 1 {
		t.Fatalf("%s: Threads() = %d after SetThreads(1)", Name, got)
	}
	SetThreads(0) // not a thread count: ignored
	if got := Threads(); got != 1 {
		t.Errorf("%s: Threads() = %d after SetThreads(0), want 1 still", Name, got)
	}
}

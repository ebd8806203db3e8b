package capped

import (
	"errors"
	"testing"
)

func TestBuffer(t *testing.T) {
	b := &Buffer{Max: 5}
	if n, err := b.Write([]byte("abc")); n != 3 || err != nil || b.Over {
		t.Fatalf("within: %d, %v, over %v", n, err, b.Over)
	}
	if n, err := b.Write([]byte("defg")); n != 0 || !errors.Is(err, ErrTooLong) || !b.Over || b.String() != "abcde" {
		t.Errorf("past Max: %d, %v, over %v, kept %q", n, err, b.Over, b.String())
	}
	q := &Buffer{Max: 2, Quiet: true}
	if n, err := q.Write([]byte("xyz")); n != 3 || err != nil || !q.Over || string(q.Bytes()) != "xy" {
		t.Errorf("quiet: %d, %v, over %v, kept %q", n, err, q.Over, q.Bytes())
	}
}

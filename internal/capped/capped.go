// Package capped bounds what a child process may write into memory.
package capped

import (
	"bytes"
	"errors"
)

// ErrTooLong is the write error of a Buffer past its Max.
var ErrTooLong = errors.New("output too long")

// Buffer keeps the first Max bytes written to it. Past them it is Over:
// a Quiet one drops the rest, another fails the write, which ends the
// copy from the process (and so the process, on a broken pipe). It has
// no ReadFrom, so io.Copy goes through Write.
type Buffer struct {
	buf   bytes.Buffer
	Max   int
	Quiet bool
	Over  bool
}

func (c *Buffer) Write(p []byte) (int, error) {
	if n := c.Max - c.buf.Len(); len(p) > n {
		c.buf.Write(p[:max(n, 0)])
		c.Over = true
		if c.Quiet {
			return len(p), nil
		}
		return 0, ErrTooLong
	}
	return c.buf.Write(p)
}

// String is what was kept.
func (c *Buffer) String() string { return c.buf.String() }

// Bytes is what was kept.
func (c *Buffer) Bytes() []byte { return c.buf.Bytes() }

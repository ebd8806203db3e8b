package live

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"selmix/core/train"
)

// Client is a connection to a live run.
type Client struct {
	last    *train.Refresh // the newest evaluation received
	greeted bool           // the server's hello was read
	c       net.Conn
	sc      *bufio.Scanner
	out     chan []byte // lines to send
	err     error
	once    sync.Once
}

// ErrNotLive reports a run with no process serving it.
var ErrNotLive = errors.New("run is not live")

// Dial connects to the run in dir and says hello: what it wants sent
// (Dial sets its Version). It checks the socket's owner and mode before
// connecting.
func Dial(dir string, hello Hello) (*Client, error) {
	path := filepath.Join(dir, SocketName)
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w (no control socket)", dir, ErrNotLive)
	}
	if err != nil {
		return nil, err
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return nil, fmt.Errorf("%s: not a socket", path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return nil, fmt.Errorf("%s: refused: owned by uid %d, not by you (uid %d)", path, st.Uid, os.Getuid())
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("%s: refused: mode %04o lets other users connect; want 0600", path, perm)
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
			return nil, fmt.Errorf("%s: %w (stale socket: the process is gone)", dir, ErrNotLive)
		}
		return nil, err
	}
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 64<<10), 256<<20)
	cl := &Client{c: c, sc: sc, out: make(chan []byte, 256)}
	hello.Version = Version
	cl.out <- append(mustJSON(struct {
		Hello Hello `json:"hello"`
	}{hello}), '\n')
	go cl.write()
	return cl, nil
}

// write sends queued lines, so Send never blocks its caller (a UI).
func (cl *Client) write() {
	for line := range cl.out {
		cl.c.SetWriteDeadline(time.Now().Add(writeTimeout))
		if _, err := cl.c.Write(line); err != nil {
			return
		}
	}
}

// Err is why the stream ended, if the server said or sent garbage.
func (cl *Client) Err() error { return cl.err }

// Next returns the next snapshot; false when the run's process closed the
// connection (the run ended or the process died) or ctx ended. A server
// error ends the stream and is returned by Err.
func (cl *Client) Next(ctx context.Context) (train.Snapshot, bool) {
	stop := context.AfterFunc(ctx, func() { cl.c.SetReadDeadline(time.Now()) })
	defer stop()
	for cl.sc.Scan() {
		snap, err := decodeMessage(cl.sc.Bytes(), !cl.greeted)
		cl.greeted = true
		if err != nil {
			cl.err = err
			return train.Snapshot{}, false
		}
		if snap != nil {
			s := *snap
			if s.Refresh != nil {
				cl.last = s.Refresh
			} else if s.Kind == train.KindStep {
				s.Refresh = cl.last
			}
			return s, true
		}
	}
	return train.Snapshot{}, false
}

// Send queues a control for the run without blocking. Controls past a
// queue of 256 unsent ones are dropped (the run is not reading).
func (cl *Client) Send(c train.Control) {
	defer func() { recover() }() // Send after Close: nothing to do
	select {
	case cl.out <- encodeControl(c):
	default:
	}
}

// Close disconnects; the run goes on.
func (cl *Client) Close() error {
	cl.once.Do(func() { close(cl.out) })
	return cl.c.Close()
}

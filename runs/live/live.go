// Package live lets viewers attach to a run that lives in another process.
// The run's process serves a Unix-domain socket in its run directory
// (mode 0600, never a TCP port); each client receives the engine's
// snapshots as JSON lines and may send controls back as JSON lines.
//
// A client's first line may be a hello saying what it wants, as
// {"hello":{"matrices":true}}: a client that shows the gain matrix G and
// the mixup distribution P asks for them, and gets them at every refresh
// as base64 of little-endian float32 ("G" and "P" of "Refresh"; at
// K = 1000 a JSON float array would be ten times the 5 MB). A client that
// says nothing within a second (scripts, selmix attach --follow, selmix
// stop) gets no matrices: G and P are absent, and the snapshot's G and P
// nil. The server sends nothing before it has the hello or has waited.
//
// A client that is slow or gone never slows the run: every client reads
// its own coalescing train.Stream (per-step snapshots merge, events are
// kept), and a client whose writes stall is dropped.
package live

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"selmix/core/train"
)

// SocketName is the control socket's file name inside a run directory.
const SocketName = "control.sock"

// writeTimeout bounds one write to a client; a client that cannot take a
// snapshot in this time is dropped.
const writeTimeout = 5 * time.Second

// helloWait is how long the server waits for a client's hello before it
// sends with the defaults.
const helloWait = time.Second

// stepEvery is how often step snapshots go out to a client: in between,
// the client's stream coalesces them, so a fast run costs a client (and
// the run's process) a few messages a second, not one per step.
const stepEvery = 100 * time.Millisecond

// Engine is what a Server serves: the train.Engine.
type Engine interface {
	Subscribe() *train.Stream
	Unsubscribe(*train.Stream)
	Send(train.Control)
}

// Server serves one run's socket.
type Server struct {
	ln   *net.UnixListener
	path string
	eng  Engine
	wg   sync.WaitGroup
	mu   sync.Mutex
	subs map[*train.Stream]net.Conn
	done chan struct{}
}

// MaxSocketPath bounds a socket's path: sun_path is 108 bytes, the last
// one NUL.
const MaxSocketPath = 108

// Serve listens on dir/control.sock. A stale socket left by a crashed
// process is replaced; the socket is created with mode 0600.
func Serve(dir string, eng Engine) (*Server, error) {
	path := filepath.Join(dir, SocketName)
	if len(path) >= MaxSocketPath {
		// sun_path is 108 bytes: bind through a relative path instead.
		return nil, fmt.Errorf("%s: path too long for a Unix socket (%d bytes, limit 107); use a shorter --runs directory", path, len(path))
	}
	os.Remove(path)
	old := syscall.Umask(0o177)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	s := &Server{ln: ln, path: path, eng: eng, subs: map[*train.Stream]net.Conn{}, done: make(chan struct{})}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			return
		}
		if err := checkPeer(c); err != nil {
			fmt.Fprintf(c, "%s\n", mustJSON(Message{Error: err.Error()}))
			c.Close()
			continue
		}
		// Subscribe at once so nothing published meanwhile is missed; the
		// sender waits for the client's hello.
		st := s.eng.Subscribe()
		s.mu.Lock()
		s.subs[st] = c
		s.mu.Unlock()
		cs := &client{hello: make(chan struct{})}
		s.wg.Add(2)
		go s.send(c, st, cs)
		go s.receive(c, st, cs)
	}
}

// checkPeer refuses a client of another user (SO_PEERCRED).
func checkPeer(c *net.UnixConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cred *syscall.Ucred
	var cerr error
	raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	})
	if cerr != nil {
		return fmt.Errorf("reading peer credentials: %w", cerr)
	}
	if uid := os.Getuid(); int(cred.Uid) != uid {
		return fmt.Errorf("refused: the run belongs to uid %d, client is uid %d", uid, cred.Uid)
	}
	return nil
}

// Hello is what a client asks for in its first line.
type Hello struct {
	// Matrices: send G and P with every refresh. Default false.
	Matrices bool `json:"matrices"`
}

// client is the server's state of one connection.
type client struct {
	matrices atomic.Bool
	hello    chan struct{} // closed once the first line is read (or never comes)
	once     sync.Once
}

func (c *client) greeted() { c.once.Do(func() { close(c.hello) }) }

// Message is one line from the server: a snapshot, or an error that ends
// the connection.
type Message struct {
	Snapshot *Snapshot `json:"snapshot,omitempty"`
	Error    string    `json:"error,omitempty"`
}

// Snapshot is train.Snapshot on the wire: non-finite floats (the loss
// before the first step) travel as null, and the evaluation as Refresh.
type Snapshot struct {
	train.Snapshot
	Loss        *float64 `json:"Loss"`
	LR          *float64 `json:"LR"`
	StepsPerSec *float64 `json:"StepsPerSec"`
	Refresh     *Refresh `json:"Refresh,omitempty"`
}

// Refresh is train.RefreshStats on the wire: G and P, when sent, are
// base64 of their little-endian float32 values, row-major; absent when
// the client did not ask for them.
type Refresh struct {
	*train.Refresh
	G string `json:"G,omitempty"`
	P string `json:"P,omitempty"`
}

// packF32 is v as base64 of little-endian float32 values.
func packF32(v []float64) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(x)))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// unpackF32 reverses packF32 and checks there are n values.
func unpackF32(s string, n int) ([]float64, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	if len(b) != 4*n {
		return nil, fmt.Errorf("%d bytes, want %d float32 values", len(b), n)
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
	}
	return v, nil
}

func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

func orNaN(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// Wire converts a snapshot for sending, with G and P if matrices.
func Wire(s train.Snapshot, matrices bool) *Snapshot {
	w := &Snapshot{Snapshot: s, Loss: finite(s.Loss), LR: finite(s.LR), StepsPerSec: finite(s.StepsPerSec)}
	if rs := s.Refresh; rs != nil {
		w.Refresh = &Refresh{Refresh: rs}
		if matrices && rs.G != nil && rs.P != nil {
			w.Refresh.G, w.Refresh.P = packF32(rs.G), packF32(rs.P)
		}
	}
	return w
}

// Unwire converts a received snapshot back; G and P are nil unless they
// were sent.
func (w *Snapshot) Unwire() (train.Snapshot, error) {
	s := w.Snapshot
	s.Loss, s.LR, s.StepsPerSec = orNaN(w.Loss), orNaN(w.LR), orNaN(w.StepsPerSec)
	s.Refresh = nil
	if r := w.Refresh; r != nil {
		var rs train.Refresh
		if r.Refresh != nil {
			rs = *r.Refresh
		}
		rs.G, rs.P = nil, nil
		if r.G != "" || r.P != "" {
			if rs.K < 1 || rs.K > 1<<14 {
				return s, fmt.Errorf("G and P for K = %d classes", rs.K)
			}
			var err error
			if rs.G, err = unpackF32(r.G, rs.K*rs.K); err != nil {
				return s, fmt.Errorf("G: %v", err)
			}
			if rs.P, err = unpackF32(r.P, rs.K*rs.K); err != nil {
				return s, fmt.Errorf("P: %v", err)
			}
		}
		s.Refresh = &rs
	}
	return s, nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(Message{Error: "encoding: " + err.Error()})
	}
	return b
}

func (s *Server) send(c net.Conn, st *train.Stream, cs *client) {
	defer s.wg.Done()
	defer s.drop(c, st)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.done:
		case <-ctx.Done():
		}
		cancel()
	}()
	hello := time.NewTimer(helloWait)
	select {
	case <-cs.hello:
	case <-hello.C:
	case <-ctx.Done():
		return
	}
	hello.Stop()
	bw := bufio.NewWriter(c)
	for {
		snap, ok := st.Next(ctx)
		if !ok {
			return
		}
		step := snap.Kind == train.KindStep
		if step {
			// The client keeps the last evaluation; a step does not
			// resend it.
			snap.Refresh = nil
		}
		c.SetWriteDeadline(time.Now().Add(writeTimeout))
		bw.Write(mustJSON(Message{Snapshot: Wire(snap, cs.matrices.Load())}))
		bw.WriteByte('\n')
		if err := bw.Flush(); err != nil {
			return
		}
		if step {
			select {
			case <-time.After(stepEvery):
			case <-ctx.Done():
				return
			}
		}
	}
}

func (s *Server) receive(c net.Conn, st *train.Stream, cs *client) {
	defer s.wg.Done()
	defer s.drop(c, st)
	defer cs.greeted()
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 4096), 1<<16)
	for sc.Scan() {
		if h, ok, err := decodeHello(sc.Bytes()); ok || err != nil {
			if err != nil {
				c.SetWriteDeadline(time.Now().Add(writeTimeout))
				fmt.Fprintf(c, "%s\n", mustJSON(Message{Error: err.Error()}))
				return
			}
			cs.matrices.Store(h.Matrices)
			cs.greeted()
			continue
		}
		cs.greeted() // a client that starts with a control takes the defaults
		ctl, err := decodeControl(sc.Bytes())
		if err != nil {
			c.SetWriteDeadline(time.Now().Add(writeTimeout))
			fmt.Fprintf(c, "%s\n", mustJSON(Message{Error: err.Error()}))
			return
		}
		s.eng.Send(ctl)
	}
}

// decodeHello recognises a hello line ({"hello":{…}}); ok is false for
// any other line.
func decodeHello(b []byte) (h Hello, ok bool, err error) {
	var m struct {
		Hello *json.RawMessage `json:"hello"`
	}
	if json.Unmarshal(b, &m) != nil || m.Hello == nil {
		return h, false, nil
	}
	if err := json.Unmarshal(*m.Hello, &h); err != nil {
		return h, true, fmt.Errorf("bad hello: %v", err)
	}
	return h, true, nil
}

// decodeControl parses one control line from a client. Clients change the
// run now, never at a chosen step, so At is cleared. A line without "Op"
// is refused, not read as the zero Op (pause).
func decodeControl(b []byte) (train.Control, error) {
	var ctl train.Control
	if err := json.Unmarshal(b, &ctl); err != nil {
		return ctl, fmt.Errorf("bad control: %v", err)
	}
	var has struct{ Op *json.RawMessage }
	if json.Unmarshal(b, &has); has.Op == nil {
		return ctl, errors.New(`bad control: no "Op"`)
	}
	if ctl.Op < train.OpPause || ctl.Op > train.OpSet {
		return ctl, fmt.Errorf("bad control: unknown op %d", int(ctl.Op))
	}
	ctl.At = 0
	return ctl, nil
}

func (s *Server) drop(c net.Conn, st *train.Stream) {
	s.mu.Lock()
	_, ok := s.subs[st]
	delete(s.subs, st)
	s.mu.Unlock()
	if ok {
		s.eng.Unsubscribe(st)
		st.Close()
		c.Close()
	}
}

// Close stops accepting, lets every client drain what the engine already
// published (the run's final snapshot included) and removes the socket.
func (s *Server) Close() error {
	err := s.ln.Close()
	os.Remove(s.path)
	// Streams of a finished engine are closed already; senders finish
	// draining and then drop their clients. Give stuck ones a bound.
	finished := make(chan struct{})
	go func() { s.wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(writeTimeout):
		close(s.done)
		s.mu.Lock()
		for _, c := range s.subs {
			c.Close()
		}
		s.mu.Unlock()
		<-finished
	}
	return err
}

// Client is a connection to a live run.
type Client struct {
	last *train.Refresh // the newest evaluation received
	c    net.Conn
	sc   *bufio.Scanner
	out  chan []byte // lines to send
	err  error
	once sync.Once
}

// ErrNotLive reports a run with no process serving it.
var ErrNotLive = errors.New("run is not live")

// Dial connects to the run in dir and says hello: what it wants sent. It
// checks the socket's owner and mode before connecting.
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
		snap, err := decodeMessage(cl.sc.Bytes())
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

// decodeMessage parses one line from the server: a snapshot, nothing (an
// empty message), or the error the server reported.
func decodeMessage(b []byte) (*train.Snapshot, error) {
	var m Message
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("bad message from the run: %w", err)
	}
	if m.Error != "" {
		return nil, errors.New(m.Error)
	}
	if m.Snapshot == nil {
		return nil, nil
	}
	if k := m.Snapshot.Kind; k < train.KindStep || k > train.KindLog {
		return nil, fmt.Errorf("bad message from the run: unknown snapshot kind %d", int(k))
	}
	s, err := m.Snapshot.Unwire()
	if err != nil {
		return nil, fmt.Errorf("bad message from the run: %w", err)
	}
	return &s, nil
}

// Send queues a control for the run without blocking. Controls past a
// queue of 256 unsent ones are dropped (the run is not reading).
func (cl *Client) Send(c train.Control) {
	defer func() { recover() }() // Send after Close: nothing to do
	select {
	case cl.out <- append(mustJSON(c), '\n'):
	default:
	}
}

// Close disconnects; the run goes on.
func (cl *Client) Close() error {
	cl.once.Do(func() { close(cl.out) })
	return cl.c.Close()
}

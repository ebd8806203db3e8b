package live

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"selmix/core/loop"
)

// Server serves one run's socket.
type Server struct {
	ln   *net.UnixListener
	path string
	eng  Engine
	wg   sync.WaitGroup
	mu   sync.Mutex
	subs map[*loop.Stream]net.Conn
	done chan struct{}
	// lines encodes each snapshot that carries an evaluation once for
	// all clients that ask for the same of it: at K = 1000 one line with
	// matrices is about 21.5 MB.
	lines lineCache
	// large holds a slot for each line with matrices or statistics being
	// written: at most cap(large) such lines are held by writers at once,
	// whatever the clients (each attaching client's first snapshot is a
	// line of its own).
	large chan struct{}
}

// largeSlots bounds the lines with matrices or statistics being written
// at once.
const largeSlots = 4

// lineKey is what makes two clients' lines of one snapshot the same.
type lineKey struct {
	refresh  *loop.Refresh
	kind     loop.Kind
	step     int
	ack      *loop.Ack
	summary  *loop.Summary
	state    loop.State
	hyper    loop.Hyper
	text     string
	err      string
	matrices bool
	basis    bool
}

// lineCache keeps the encoded lines of the last few snapshots.
type lineCache struct {
	mu    sync.Mutex
	keys  [4]lineKey
	lines [4][]byte
	next  int
}

// line is the encoded line of k, made by enc the first time it is asked
// for. Lines are shared: callers must not modify them.
func (lc *lineCache) line(k lineKey, enc func() []byte) []byte {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	for i, have := range lc.keys {
		if have == k && lc.lines[i] != nil {
			return lc.lines[i]
		}
	}
	b := enc()
	lc.keys[lc.next], lc.lines[lc.next] = k, b
	lc.next = (lc.next + 1) % len(lc.keys)
	return b
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
	s := &Server{ln: ln, path: path, eng: eng, subs: map[*loop.Stream]net.Conn{}, done: make(chan struct{}), large: make(chan struct{}, largeSlots)}
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
		// A client that falls behind needs the newest refresh, not the
		// ones it missed: those would stay in memory for it.
		st.KeepLatestRefresh()
		s.mu.Lock()
		s.subs[st] = c
		s.mu.Unlock()
		cs := &client{hello: make(chan struct{}), gone: make(chan struct{})}
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

// client is the server's state of one connection.
type client struct {
	matrices atomic.Bool
	stats    atomic.Bool
	hello    chan struct{} // closed once the first line is read (or never comes)
	once     sync.Once
	gone     chan struct{} // closed when the connection is dropped
	goneOnce sync.Once
}

func (c *client) greeted() { c.once.Do(func() { close(c.hello) }) }

func (s *Server) send(c net.Conn, st *loop.Stream, cs *client) {
	defer s.wg.Done()
	defer s.drop(c, st, cs)
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
	c.SetWriteDeadline(time.Now().Add(writeTimeout))
	bw.Write(mustJSON(Message{Hello: &Hello{Version: Version}}))
	bw.WriteByte('\n')
	if bw.Flush() != nil {
		return
	}
	var basis *loop.Basis // the last one sent
	sent := false         // a snapshot has gone out
	for {
		snap, ok := st.Next(ctx)
		if !ok {
			return
		}
		step := snap.Kind == loop.KindStep
		if step && sent {
			// The client keeps the last evaluation; a step does not
			// resend it. The first snapshot, where the run stands when
			// the client attaches, brings it: a paused run's statistics
			// are there for a forecast without a step.
			snap.Refresh = nil
		}
		sent = true
		if st.Backlog() > maxBacklog {
			// Too far behind: what it has not read would pile up here.
			c.SetWriteDeadline(time.Now().Add(time.Second))
			bw.Write(mustJSON(Message{Error: fmt.Sprintf("disconnected: more than %d events behind the run (read faster, or attach again)", maxBacklog)}))
			bw.WriteByte('\n')
			bw.Flush()
			return
		}
		matrices := cs.matrices.Load()
		rs := snap.Refresh
		withBasis := rs != nil && rs.Basis != nil && rs.Basis != basis && cs.stats.Load()
		held := false
		if rs != nil && (matrices || withBasis) {
			select {
			case s.large <- struct{}{}:
				held = true
			default:
				// Every slot for a large line is held (by clients that
				// read slowly): this snapshot goes without its matrices
				// and statistics; a later one brings them.
				matrices, withBasis = false, false
			}
		}
		enc := func() []byte {
			w := Wire(snap, matrices)
			if withBasis {
				// Once per evaluation: a control's snapshot shares it.
				w.Basis = wireBasis(rs.Basis)
			}
			return mustJSON(Message{Snapshot: w})
		}
		var line []byte
		if rs != nil {
			line = s.lines.line(lineKey{refresh: rs, kind: snap.Kind, step: snap.Step, ack: snap.Ack, summary: snap.Summary,
				state: snap.State, hyper: snap.Hyper, text: snap.Text, err: snap.Err, matrices: matrices, basis: withBasis}, enc)
		} else {
			line = enc()
		}
		if withBasis {
			basis = rs.Basis
		}
		c.SetWriteDeadline(time.Now().Add(writeTimeout))
		bw.Write(line)
		bw.WriteByte('\n')
		err := bw.Flush()
		if held {
			<-s.large
		}
		if err != nil {
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

func (s *Server) receive(c net.Conn, st *loop.Stream, cs *client) {
	defer s.wg.Done()
	defer s.drop(c, st, cs)
	defer cs.greeted()
	lim := newBucket()
	rep := &refused{}
	if n, ok := s.eng.(interface{ Note(string) }); ok {
		rep.note = n.Note
	}
	defer rep.flush()
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
			cs.stats.Store(h.Stats)
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
		if rep.repeats(ctl) {
			continue
		}
		if !lim.wait(cs.gone) {
			return
		}
		s.eng.Send(ctl)
	}
}

// controlRate and controlBurst bound the controls one client's are taken
// at (per second, and at once): past them the server stops reading its
// socket until the bucket refills, so a client that floods controls waits,
// and the run's loop never takes more than these from it.
const (
	controlRate  = 20
	controlBurst = 40
)

// bucket is a token bucket of controlRate tokens a second, controlBurst
// at most.
type bucket struct {
	tokens float64
	last   time.Time
}

func newBucket() *bucket { return &bucket{tokens: controlBurst, last: time.Now()} }

// wait takes a token, waiting for one; false if done closes first.
func (b *bucket) wait(done <-chan struct{}) bool {
	for {
		now := time.Now()
		b.tokens = min(controlBurst, b.tokens+now.Sub(b.last).Seconds()*controlRate)
		b.last = now
		if b.tokens >= 1 {
			b.tokens--
			return true
		}
		t := time.NewTimer(time.Duration((1 - b.tokens) / controlRate * float64(time.Second)))
		select {
		case <-done:
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

// refused folds a client's repeats of a control that no run takes (an
// unknown key, a value out of range): the first goes to the engine, which
// refuses and logs it as any other; the repeats are counted, and said in
// one line once another control comes or the client leaves, so a client
// repeating one bad line neither grows the log nor holds up the run.
type refused struct {
	note  func(string)
	ctl   loop.Control
	why   string
	count int
}

// repeats reports whether ctl repeats the last control refused, counting
// it; otherwise it says the count of that one and starts anew.
func (r *refused) repeats(ctl loop.Control) bool {
	if r.why != "" && ctl.Op == r.ctl.Op && ctl.Key == r.ctl.Key && ctl.Value == r.ctl.Value {
		r.count++
		return true
	}
	r.flush()
	r.why = ""
	if ctl.Op == loop.OpSet {
		var h loop.Hyper
		if err := h.Set(ctl.Key, ctl.Value); err != nil {
			r.ctl, r.why = ctl, err.Error()
		}
	}
	return false
}

// flush says how often the last refused control was repeated, if it was.
func (r *refused) flush() {
	if r.count > 0 && r.note != nil {
		r.note(fmt.Sprintf("control client: %.200s repeated %d more time(s), not taken (%.200s)", r.ctl, r.count, r.why))
	}
	r.count = 0
}

func (s *Server) drop(c net.Conn, st *loop.Stream, cs *client) {
	cs.goneOnce.Do(func() { close(cs.gone) })
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

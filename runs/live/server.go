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

	"selmix/core/train"
)

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

// client is the server's state of one connection.
type client struct {
	matrices atomic.Bool
	stats    atomic.Bool
	hello    chan struct{} // closed once the first line is read (or never comes)
	once     sync.Once
}

func (c *client) greeted() { c.once.Do(func() { close(c.hello) }) }

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
	c.SetWriteDeadline(time.Now().Add(writeTimeout))
	bw.Write(mustJSON(Message{Hello: &Hello{Version: Version}}))
	bw.WriteByte('\n')
	if bw.Flush() != nil {
		return
	}
	var basis *train.Basis // the last one sent
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
		w := Wire(snap, cs.matrices.Load())
		if rs := snap.Refresh; rs != nil && rs.Basis != nil && rs.Basis != basis && cs.stats.Load() {
			// Once per evaluation: a control's snapshot shares it.
			basis, w.Basis = rs.Basis, wireBasis(rs.Basis)
		}
		c.SetWriteDeadline(time.Now().Add(writeTimeout))
		bw.Write(mustJSON(Message{Snapshot: w}))
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
		s.eng.Send(ctl)
	}
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

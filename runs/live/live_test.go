package live

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"selmix/core/loop"
	"selmix/runs/live/livetest"
)

// fakeEngine publishes what the test says to every subscriber, as
// train.Engine does, and records the controls it receives.
type fakeEngine struct {
	mu   sync.Mutex
	subs []*loop.Stream
	got  chan loop.Control
}

func newFake() *fakeEngine { return &fakeEngine{got: make(chan loop.Control, 16)} }

// serveFake serves a fake engine's run in a new short folder.
func serveFake(t *testing.T) (string, *fakeEngine, *Server) {
	t.Helper()
	dir, eng := livetest.ShortDir(t), newFake()
	srv, err := Serve(dir, eng)
	if err != nil {
		t.Fatal(err)
	}
	return dir, eng, srv
}

func (f *fakeEngine) Subscribe() *loop.Stream {
	st := loop.NewStream()
	f.mu.Lock()
	f.subs = append(f.subs, st)
	f.mu.Unlock()
	return st
}

func (f *fakeEngine) Unsubscribe(st *loop.Stream) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, s := range f.subs {
		if s == st {
			f.subs = append(f.subs[:i:i], f.subs[i+1:]...)
			return
		}
	}
}

func (f *fakeEngine) Send(c loop.Control) { f.got <- c }

func (f *fakeEngine) publish(s loop.Snapshot) {
	f.mu.Lock()
	subs := f.subs
	f.mu.Unlock()
	for _, st := range subs {
		st.Publish(s)
	}
}

func (f *fakeEngine) end() {
	f.mu.Lock()
	for _, st := range f.subs {
		st.Close()
	}
	f.mu.Unlock()
}

func (f *fakeEngine) waitSubs(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		f.mu.Lock()
		k := len(f.subs)
		f.mu.Unlock()
		if k >= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("fewer than %d subscribers after 5s", n)
}

// Two clients see the same events in the same order, with the step at
// which a control took effect; a control from one reaches the engine; a
// client that never reads does not hold anything up; NaN survives the wire.
func TestTwoClientsAndASlowOne(t *testing.T) {
	dir, eng, srv := serveFake(t)
	fi, err := os.Stat(filepath.Join(dir, SocketName))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v (err %v), want 0600", fi.Mode().Perm(), err)
	}
	a, err := Dial(dir, Hello{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Dial(dir, Hello{})
	if err != nil {
		t.Fatal(err)
	}
	slow, err := Dial(dir, Hello{}) // never reads
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	eng.waitSubs(t, 3)

	a.Send(loop.Control{Op: loop.OpSet, Key: "s", Value: "20", At: 99})
	select {
	case c := <-eng.got:
		if c.Key != "s" || c.Value != "20" || c.At != 0 {
			t.Errorf("engine got %+v, want set s=20 with At cleared", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("control never reached the engine")
	}

	published := make(chan struct{})
	go func() {
		defer close(published)
		eng.publish(loop.Snapshot{Kind: loop.KindRefresh, Step: 0, Loss: math.NaN()})
		big := strings.Repeat("x", 1<<12)
		for i := 1; i <= 20000; i++ {
			eng.publish(loop.Snapshot{Kind: loop.KindStep, Step: i, Loss: 1, Err: big})
		}
		eng.publish(loop.Snapshot{Kind: loop.KindControl, Step: 20000, Ack: &loop.Ack{Control: loop.Control{Op: loop.OpSet, Key: "s", Value: "20"}, Step: 20000}})
		eng.publish(loop.Snapshot{Kind: loop.KindFinal, Step: 20000})
		eng.end()
	}()
	select {
	case <-published:
	case <-time.After(10 * time.Second):
		t.Fatal("publishing blocked on clients")
	}
	for name, cl := range map[string]*Client{"a": a, "b": b} {
		var kinds []string
		var first loop.Snapshot
		for {
			s, ok := cl.Next(context.Background())
			if !ok {
				break
			}
			if len(kinds) == 0 {
				first = s
			}
			if s.Kind != loop.KindStep {
				kinds = append(kinds, s.Kind.String())
			}
			if s.Kind == loop.KindControl && (s.Ack == nil || s.Ack.Step != 20000) {
				t.Errorf("%s: ack %+v, want step 20000", name, s.Ack)
			}
		}
		if got := strings.Join(kinds, ","); got != "refresh,control,final" {
			t.Errorf("client %s saw events %s, want refresh,control,final", name, got)
		}
		if !math.IsNaN(first.Loss) {
			t.Errorf("client %s: NaN loss arrived as %v", name, first.Loss)
		}
		cl.Close()
	}
	if err := srv.Close(); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(filepath.Join(dir, SocketName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left behind after Close: %v", err)
	}
}

func TestDialRefuses(t *testing.T) {
	dir := livetest.ShortDir(t)
	if _, err := Dial(dir, Hello{}); !errors.Is(err, ErrNotLive) {
		t.Errorf("no socket: err %v, want ErrNotLive", err)
	}
	srv, err := Serve(dir, newFake())
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, SocketName)
	os.Chmod(sock, 0o666)
	if _, err := Dial(dir, Hello{}); err == nil || !strings.Contains(err.Error(), "mode 0666") {
		t.Errorf("world-writable socket: err %v, want a refusal naming the mode", err)
	}
	os.Chmod(sock, 0o600)
	if os.Getuid() == 0 {
		// Only root can hand the socket to another user to test this.
		if err := os.Lchown(sock, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := Dial(dir, Hello{}); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
			t.Errorf("socket of another user: err %v, want a refusal naming the owner", err)
		}
		os.Lchown(sock, 0, 0)
	}
	srv.ln.Close() // the process died: the socket file stays, nobody listens
	if _, err := Dial(dir, Hello{}); !errors.Is(err, ErrNotLive) {
		t.Errorf("stale socket: err %v, want ErrNotLive", err)
	}
	os.Remove(sock)
	if err := os.WriteFile(sock, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Dial(dir, Hello{}); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("regular file: err %v, want 'not a socket'", err)
	}
}

func TestDecode(t *testing.T) {
	for _, line := range []string{`{"op":"set","key":"s","value":"3","at":50,"auto":true}`, `{"op":"set","key":"s","value":"3","at":50,"source":"replay"}`} {
		if c, err := decodeControl([]byte(line)); err != nil || c.Key != "s" || c.At != 0 || c.Source != loop.SourceUser || c.Op != loop.OpSet {
			t.Errorf("valid control %s: %+v, %v; want set s at no step from the user", line, c, err)
		}
	}
	for _, bad := range []string{`{"op":"jump"}`, `{"op":4}`, `{"Op":4,"Key":"s","Value":"3"}`, `{"key":"s"}`, `not json`} {
		if _, err := decodeControl([]byte(bad)); err == nil {
			t.Errorf("control %s accepted", bad)
		}
	}
	if s, err := decodeMessage([]byte(`{"snapshot":{"kind":"refresh","step":5,"loss":"NaN"}}`), false); err != nil || s == nil || s.Step != 5 || !math.IsNaN(s.Loss) {
		t.Errorf("valid snapshot: %+v, %v", s, err)
	}
	if _, err := decodeMessage([]byte(`{"error":"refused: mode"}`), true); err == nil || err.Error() != "refused: mode" {
		t.Errorf("server error not returned: %v", err)
	}
	if _, err := decodeMessage([]byte(`{"snapshot":{"kind":"jump"}}`), false); err == nil {
		t.Error("unknown snapshot kind accepted")
	}
}

// Lines on the socket are input from another process: decoding never
// panics, and what it accepts prints (String on Op and Kind) safely.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"op":"set","key":"s","value":"3"}`))
	f.Add([]byte(`{"snapshot":{"kind":"control","ack":{"op":"jump"}}}`))
	f.Add([]byte(`{"snapshot":{"kind":"refresh","refresh":{"g":[1,2]}}}`))
	f.Add([]byte(`{"snapshot":{"kind":"refresh","refresh":{"k":1,"g":"AACAPw==","p":"AACAPw==","report":{"recall":[1]}}}}`))
	f.Add([]byte(`{"hello":{"version":2,"matrices":true}}`))
	f.Add([]byte(`{"snapshot":{"kind":"final","loss":"-Inf","summary":{"steps":3,"best":{"step":1}}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		decodeHello(b)
		if c, err := decodeControl(b); err == nil {
			_ = c.String()
		}
		if s, err := decodeMessage(b, false); err == nil && s != nil {
			_ = s.Kind.String()
			if s.Ack != nil {
				_ = s.Ack.Control.String()
			}
		}
	})
}

// A client that asks for matrices gets G and P with each refresh (as
// float32), one that does not gets none, and one that says nothing at all
// gets none once the server has waited for its hello.
func TestMatricesOnRequest(t *testing.T) {
	dir, eng, srv := serveFake(t)
	defer srv.Close()
	want, err := Dial(dir, Hello{Matrices: true})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Dial(dir, Hello{})
	if err != nil {
		t.Fatal(err)
	}
	mute, err := net.Dial("unix", filepath.Join(dir, SocketName)) // a script that says nothing
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()
	eng.waitSubs(t, 3)
	const K = 3
	G := []float64{0.1, -0.2, 0.3, 1e-9, 0, -1, 2, 3, 4}
	P := []float64{0.5, 0, 0, 0, 0.25, 0, 0, 0, 0.25}
	start := time.Now()
	eng.publish(loop.Snapshot{Kind: loop.KindRefresh, Step: 50, Refresh: &loop.Refresh{Step: 50, K: K, Psi: 0.5, G: G, P: P}})
	eng.end()

	s, ok := want.Next(context.Background())
	if !ok {
		t.Fatalf("no snapshot: %v", want.Err())
	}
	if time.Since(start) > helloWait*9/10 {
		t.Errorf("first snapshot after %v: the server waited although the client said hello", time.Since(start))
	}
	for i := range G {
		if s.Refresh.G[i] != float64(float32(G[i])) || s.Refresh.P[i] != float64(float32(P[i])) {
			t.Fatalf("G, P arrived as %v, %v; want float32 of %v, %v", s.Refresh.G, s.Refresh.P, G, P)
		}
	}
	if s.Refresh.Psi != 0.5 || s.Refresh.K != K {
		t.Errorf("evaluation arrived as %+v", s.Refresh)
	}
	s, ok = plain.Next(context.Background())
	if !ok || s.Refresh == nil || s.Refresh.G != nil || s.Refresh.P != nil || s.Refresh.Psi != 0.5 {
		t.Errorf("client without matrices got %+v (ok %v)", s.Refresh, ok)
	}
	mr := bufio.NewReader(mute)
	line, err := mr.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) < helloWait*9/10 {
		t.Errorf("a client that said nothing was sent to after %v, before the hello wait", time.Since(start))
	}
	if line != `{"hello":{"version":2}}`+"\n" {
		t.Errorf("the server's first line %q, want its hello", line)
	}
	if line, err = mr.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(line, `"g"`) || !strings.Contains(line, `"psi":0.5`) {
		t.Errorf("a client that said nothing got %.200s", line)
	}
	want.Close()
	plain.Close()
}

func TestDecodeHelloAndMatrices(t *testing.T) {
	for line, want := range map[string]struct {
		ok, matrices, err bool
	}{
		`{"hello":{"version":2,"matrices":true}}`: {true, true, false},
		`{"hello":{"version":2}}`:                 {true, false, false},
		`{"hello":"yes"}`:                         {true, false, true},
		`{"hello":{"matrices":true}}`:             {true, true, true}, // version 1
		`{"op":"set"}`:                            {false, false, false},
	} {
		h, ok, err := decodeHello([]byte(line))
		if ok != want.ok || h.Matrices != want.matrices || (err != nil) != want.err {
			t.Errorf("decodeHello(%s) = %+v, %v, %v", line, h, ok, err)
		}
	}
	// A hello is no control: without "Op" a line would otherwise pause.
	if _, err := decodeControl([]byte(`{"hello":{"version":2,"matrices":true}}`)); err == nil {
		t.Error("a line without Op decoded as a control")
	}
	for _, bad := range []string{
		`{"snapshot":{"kind":"refresh","refresh":{"k":2,"g":"AAAA","p":"AAAA"}}}`,        // 1 value for 2×2
		`{"snapshot":{"kind":"refresh","refresh":{"k":1,"g":"not base64!","p":"AAAA"}}}`, // not base64
		`{"snapshot":{"kind":"refresh","refresh":{"k":0,"g":"AAAA","p":"AAAA"}}}`,        // no K
		`{"snapshot":{"kind":"refresh","refresh":{"g":[1,2]}}}`,                          // a JSON array
		`{"snapshot":{"kind":"refresh","refresh":{"k":2,"report":{"recall":[1]}}}}`,      // 1 recall for 2 classes
	} {
		if _, err := decodeMessage([]byte(bad), false); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	w := Wire(loop.Snapshot{Kind: loop.KindRefresh, Refresh: &loop.Refresh{K: 1, G: []float64{2}, P: []float64{1}}}, true)
	b, _ := json.Marshal(Message{Snapshot: w})
	s, err := decodeMessage(b, false)
	if err != nil || s.Refresh.G[0] != 2 || s.Refresh.P[0] != 1 {
		t.Errorf("round trip: %+v, %v", s, err)
	}
}

// Clients that ask for the matrices and never read cost the run almost
// nothing each: at K = 1000 a refresh's line is about 21.5 MB, encoded
// once for all of them (issue 45: 30 such clients took a run from 545 MB
// to 2.9 GB, 80 to 5.57 GB, each encoding and holding its own); a client
// further behind than maxBacklog events is disconnected.
func TestSlowClientsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("K = 1000 matrices")
	}
	dir, eng, srv := serveFake(t)
	defer srv.Close()
	const K, clients = 1000, 30
	defer muteClients(t, dir, clients)()
	eng.waitSubs(t, clients)
	before := liveHeap()
	eng.publish(loop.Snapshot{Kind: loop.KindRefresh, Step: 10, Refresh: bigRefresh(K, 10)})
	time.Sleep(writeTimeout / 2) // every sender encodes and blocks writing
	grown := liveHeap() - before
	t.Logf("%d clients that never read, K = %d: heap %d MB more", clients, K, grown>>20)
	// One line (about 21.5 MB) and its refresh (16 MB), not one per client.
	if grown > 120<<20 {
		t.Errorf("heap grew by %d MB with %d clients that never read: their lines are not shared", grown>>20, clients)
	}

	// A client far behind is disconnected with one line saying why.
	slow, err := net.Dial("unix", filepath.Join(dir, SocketName))
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	eng.waitSubs(t, clients+1)
	// Published before its hello, while its sender waits for it: the
	// events queue up for it as for a client that does not read.
	small := &loop.Refresh{Step: 20, K: 2, Psi: 0.5}
	for i := range 4 * maxBacklog {
		eng.publish(loop.Snapshot{Kind: loop.KindLog, Step: 20, Refresh: small, Text: fmt.Sprint("event ", i)})
	}
	slow.Write([]byte(`{"hello":{"version":2}}` + "\n"))
	slow.SetReadDeadline(time.Now().Add(10 * time.Second))
	sr := bufio.NewReader(slow)
	if line, err := sr.ReadString('\n'); err != nil || !strings.Contains(line, `"hello"`) {
		t.Fatalf("first line %q, %v", line, err)
	}
	var last string
	for {
		line, err := sr.ReadString('\n')
		if err != nil {
			break
		}
		last = line
	}
	if !strings.Contains(last, "more than 16 events behind") {
		t.Errorf("a client %d events behind: last line %.200q, want the disconnection", 4*maxBacklog, last)
	}
}

// noteEngine is a fakeEngine that also takes notes, as train.Engine does.
type noteEngine struct {
	*fakeEngine
	notes chan string
}

func (n noteEngine) Note(s string) { n.notes <- s }

// A client flooding controls neither grows the log nor holds up the run
// (issue 45: 20,000 refused `set s=-1` lines added 20,278 events and held
// training for about 90 s; 5,000 pause/resume pairs held it at steps 55–57
// for 20 s): a control no run takes reaches the engine once and its
// repeats are counted in one note; valid controls are taken at most
// controlRate a second after a burst of controlBurst.
func TestControlFlood(t *testing.T) {
	dir := livetest.ShortDir(t)
	eng := noteEngine{newFake(), make(chan string, 16)}
	eng.got = make(chan loop.Control, 100000)
	srv, err := Serve(dir, eng)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	defer eng.end() // the run ends: its client is dropped, waiting or not
	c, err := net.Dial("unix", filepath.Join(dir, SocketName))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go io.Copy(io.Discard, c)
	eng.waitSubs(t, 1)
	flood := strings.Repeat(`{"op":"set","key":"s","value":"-1"}`+"\n", 20000)
	start := time.Now()
	if _, err := c.Write([]byte(flood + `{"op":"pause"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	var got []loop.Control
	for len(got) < 2 {
		select {
		case ctl := <-eng.got:
			got = append(got, ctl)
		case <-time.After(10 * time.Second):
			t.Fatalf("after 10 s the engine has %v", got)
		}
	}
	if got[0].String() != "set s=-1" || got[1].Op != loop.OpPause {
		t.Errorf("the engine got %v, want set s=-1 once, then pause", got)
	}
	select {
	case n := <-eng.notes:
		if !strings.Contains(n, "set s=-1 repeated 19999 more time(s), not taken (s: ") {
			t.Errorf("note %q", n)
		}
	case <-time.After(5 * time.Second):
		t.Error("no note of the repeats")
	}
	t.Logf("20,000 refused lines and a pause taken in %v", time.Since(start).Round(time.Millisecond))

	// Valid controls: a burst, then controlRate a second.
	pairs := strings.Repeat(`{"op":"pause"}`+"\n"+`{"op":"resume"}`+"\n", 500)
	start = time.Now()
	if _, err := c.Write([]byte(pairs)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	n := len(eng.got)
	if took := time.Since(start).Seconds(); float64(n) > controlBurst+controlRate*took+2 {
		t.Errorf("%d controls taken in %.2f s, more than a burst of %d and %d a second", n, took, controlBurst, controlRate)
	}
	if n < controlBurst {
		t.Errorf("only %d controls taken in a second, want at least the burst of %d", n, controlBurst)
	}
}

// Clients that attach one after another each get a first snapshot of their
// own (where the run stands as they attach): at K = 1000 with matrices
// each is a line of about 21.5 MB, so at most largeSlots of them are held
// by writers at once, and a client past them gets its snapshot without the
// matrices (a K = 1000 run with 80 clients that never read went from 1.17
// to 1.9 GB RSS).
func TestAttachingClientsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("K = 1000 matrices")
	}
	dir, eng, srv := serveFake(t)
	defer srv.Close()
	const K, clients = 1000, 30
	rs := bigRefresh(K, 100)
	before := liveHeap()
	for i := range clients {
		defer muteClients(t, dir, 1)()
		eng.waitSubs(t, i+1)
		// Where the run stands as this client attaches: a step of its own.
		eng.publish(loop.Snapshot{Kind: loop.KindStep, Step: 101 + i, Refresh: rs})
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // every sender has encoded and blocks
	grown := liveHeap() - before
	t.Logf("%d clients attaching one by one, K = %d: heap %d MB more", clients, K, grown>>20)
	if limit := uint64(2*largeSlots+4) * 22 << 20; grown > limit {
		t.Errorf("heap grew by %d MB, more than %d MB: the first snapshots' lines are not bounded", grown>>20, limit>>20)
	}
}

// A run that goes on refreshing while 80 clients that asked for matrices
// never read keeps only the newest refresh for them: each refresh holds
// K×K matrices (16 MB at K = 1000) while any client has not read it (a
// K = 1000 run with 80 such clients went from 1.17 to 2.0 GB RSS). The
// live heap stays within a few refreshes' worth.
func TestSlowClientsKeepTheNewestRefresh(t *testing.T) {
	if testing.Short() {
		t.Skip("K = 1000 matrices for 9 s")
	}
	dir, eng, srv := serveFake(t)
	defer srv.Close()
	const K, clients = 1000, 80
	defer muteClients(t, dir, clients)()
	eng.waitSubs(t, clients)
	var peak uint64
	for i := range 30 { // 3 refreshes a second, as a K = 1000 run at refresh 10
		rs := bigRefresh(K, 10*i)
		eng.publish(loop.Snapshot{Kind: loop.KindRefresh, Step: 10 * i, Refresh: rs})
		for j := range 10 {
			eng.publish(loop.Snapshot{Kind: loop.KindStep, Step: 10*i + j, Refresh: rs})
		}
		time.Sleep(300 * time.Millisecond)
		peak = max(peak, liveHeap())
	}
	t.Logf("%d clients that never read, 30 refreshes at K = %d: live heap at most %d MB", clients, K, peak>>20)
	if peak > 160<<20 {
		t.Errorf("live heap reached %d MB: refreshes the clients did not read stay in memory", peak>>20)
	}
}

// A stream that keeps the latest refresh drops the older refreshes a
// reader has not read and strips the waiting controls of theirs; steps
// and other events stay, in order. A plain stream drops nothing.
func TestKeepLatestRefresh(t *testing.T) {
	r1, r2 := &loop.Refresh{Step: 10}, &loop.Refresh{Step: 20}
	ack := &loop.Ack{Control: loop.Control{Op: loop.OpSet, Key: "s", Value: "2"}, Step: 12}
	for _, lossy := range []bool{false, true} {
		st := loop.NewStream()
		if lossy {
			st.KeepLatestRefresh()
		}
		st.Publish(loop.Snapshot{Kind: loop.KindRefresh, Step: 10, Refresh: r1})
		st.Publish(loop.Snapshot{Kind: loop.KindControl, Step: 12, Refresh: r1, Ack: ack})
		st.Publish(loop.Snapshot{Kind: loop.KindRefresh, Step: 20, Refresh: r2})
		st.Close()
		var got []string
		for s, ok := st.Next(context.Background()); ok; s, ok = st.Next(context.Background()) {
			got = append(got, fmt.Sprintf("%s@%d refresh %v", s.Kind, s.Step, s.Refresh != nil))
		}
		want := []string{"refresh@10 refresh true", "control@12 refresh true", "refresh@20 refresh true"}
		if lossy {
			want = []string{"control@12 refresh false", "refresh@20 refresh true"}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("lossy %v: %q, want %q", lossy, got, want)
		}
	}
}

// muteClients connects n clients to dir's socket that say hello (asking
// for matrices) and never read, and returns what closes them: before the
// server closes, which otherwise waits for its stuck writers.
func muteClients(t *testing.T, dir string, n int) (closeAll func()) {
	t.Helper()
	var cs []net.Conn
	closeAll = func() {
		for _, c := range cs {
			c.Close()
		}
	}
	for range n {
		c, err := net.Dial("unix", filepath.Join(dir, SocketName))
		if err != nil {
			closeAll()
			t.Fatal(err)
		}
		cs = append(cs, c)
		if _, err := c.Write([]byte(`{"hello":{"version":2,"matrices":true}}` + "\n")); err != nil {
			closeAll()
			t.Fatal(err)
		}
	}
	return closeAll
}

// liveHeap is the heap still in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// bigRefresh is a refresh at step of K classes with K×K matrices.
func bigRefresh(K, step int) *loop.Refresh {
	G, P := make([]float64, K*K), make([]float64, K*K)
	for i := range G {
		G[i], P[i] = float64(i%97)/97-0.5, 1/float64(K*K)
	}
	return &loop.Refresh{Step: step, K: K, Psi: 0.5, G: G, P: P}
}

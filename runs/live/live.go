// Package live lets viewers attach to a run that lives in another process.
// The run's process serves a Unix-domain socket in its run directory
// (mode 0600, never a TCP port); each client receives the engine's
// snapshots as JSON lines and may send controls back as JSON lines, in
// the run's own snake_case records (wire.go; docs/run-format.md, "The
// control socket").
//
// Each side's first line is a hello with the protocol's Version. A
// client's says what it wants, as {"hello":{"version":2,"matrices":true}}:
// a client that shows the gain matrix G and the mixup distribution P asks
// for them, and gets them at every refresh as base64 of little-endian
// float32 ("g" and "p" of "refresh"; at K = 1000 a JSON float array would
// be ten times the 5 MB). A client that says nothing within a second gets
// no matrices. The server sends nothing before it has the hello or has
// waited; then its own hello, then snapshots.
//
// A client that is slow or gone never slows the run: every client reads
// its own coalescing loop.Stream (per-step snapshots merge, events are
// kept), and a client whose writes stall is dropped.
package live

import (
	"time"

	"selmix/core/loop"
)

// SocketName is the control socket's file name inside a run directory.
const SocketName = "control.sock"

// writeTimeout bounds one write to a client; a client that cannot take a
// snapshot in this time is dropped.
const writeTimeout = 5 * time.Second

// maxBacklog bounds the events a client may fall behind by: one further
// behind is disconnected, so the refreshes it has not read (each holding
// K×K matrices at K = 1000) do not stay in memory for it.
const maxBacklog = 16

// helloWait is how long the server waits for a client's hello before it
// sends with the defaults.
const helloWait = time.Second

// stepEvery is how often step snapshots go out to a client: in between,
// the client's stream coalesces them, so a fast run costs a client (and
// the run's process) a few messages a second, not one per step.
const stepEvery = 100 * time.Millisecond

// Engine is what a Server serves: the train.Engine.
type Engine interface {
	Subscribe() *loop.Stream
	Unsubscribe(*loop.Stream)
	Send(loop.Control)
}

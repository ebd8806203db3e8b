// Package runs is selmix's run storage: one directory per run under a runs
// root, written so that a crash, a kill -9 or a full disk never loses what
// was already reported as saved, and never leaves a file a reader mis-reads.
//
// Layout of a run directory (root/<id>, id like 20261122-0753-a3f9):
//
//	run.json                 metadata (Meta), replaced atomically
//	config.toml              resolved config, written once atomically
//	events.jsonl             append-only event log, one JSON object a line
//	arrays.bin               append-only records of arrays events refer to
//	checkpoints/step-NNNNNNN.ckpt  opaque state, written atomically
//	summary.json             written atomically at the end
//	lock                     writer lock (flock) holding the writer's pid
//	worker.log, worker.tail.log[.1]  a worker's stderr, bounded (WorkerLog)
//
// Atomic files are written as a temp file in the same directory, fsynced,
// renamed over the target and followed by an fsync of the directory. Temp
// files are named ".<name>.tmp-*"; readers ignore them and OpenWriter
// deletes stale ones.
//
// The event log is the only file written in place. Each Append is a single
// write of a whole line; a failed or short write is truncated back to the
// previous size. A crash can still leave a torn last line; readers report it
// as a Warning and ignore it, and OpenWriter truncates it before appending.
// Any invalid line that is not the last one is an error naming file and line.
//
// arrays.bin is the event log's binary sidecar: self-describing,
// checksummed records of named arrays (EncodeRecord), which an event
// refers to by offset and length (Event.Arrays). A record is appended and
// fsynced before its event, so every record an event refers to is whole;
// a crash between the two leaves a record no event refers to, which
// readers never look at and OpenWriter cuts off. The byte layout and the
// event kinds are documented in docs/run-format.md.
// While a run is live, a reader may see the writer's half-written last line:
// that is the same torn-tail warning and is harmless.
//
// Liveness. A writer holds an exclusive flock(2) (LOCK_EX|LOCK_NB) on the
// lock file for its whole life and writes its pid into it. flock locks belong
// to the open file description, so the kernel drops them when the writer
// exits for any reason, including SIGKILL. IsLive asks whether some process
// holds that lock by trying LOCK_SH|LOCK_NB on its own read-only descriptor:
// success means nobody holds LOCK_EX (the shared lock is released at once);
// EWOULDBLOCK means a writer is live, and its pid is read from the file.
// Readers never take the lock for longer than that probe and never modify a
// run. Because a probe briefly holds LOCK_SH, a writer that meets
// EWOULDBLOCK retries for a short while before reporting the run as busy.
// flock is advisory and reliable on local file systems; on NFS it may be
// emulated with POSIX locks and liveness across hosts is not guaranteed.
package runs
